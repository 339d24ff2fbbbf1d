#pragma once
// Punctuation normalisation, exactly as the reference `punc_norm` of each variant (chatterbox/tts.py,
// mtl_tts.py, tts_turbo.py): one skeleton, the replacements and accepted endings as data.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chatterbox::text {

// The reference's replacement for empty input.
inline constexpr std::string_view kEmptyTextFallback = "You need to add some text for me to talk.";

struct PunctuationRules {
    std::vector<std::pair<std::string_view, std::string_view>> replacements; // applied in order, each to the whole text
    std::vector<std::string_view> sentence_enders; // "." is appended unless the text ends with one
};

// tts.py: "..." -> ", ", "…" -> ", ", ":" -> ",", " - " -> ", ", ";" -> ", ", em/en dash -> "-", " ," -> ",",
// curly quotes -> straight; endings . ! ? - ,
const PunctuationRules &english_punctuation();
// mtl_tts.py: English's replacements; the endings also take 、 ， 。 ？ ！
const PunctuationRules &multilingual_punctuation();
// tts_turbo.py: "…" -> ", ", ":" -> ",", em/en dash -> "-", " ," -> ",", curly quotes -> straight
// (no "...", " - " or ";" rule); endings . ! ? - ,
const PunctuationRules &turbo_punctuation();

// In order: empty -> kEmptyTextFallback; upper-case the first character if it is lower-case (Python full case
// mapping); collapse runs of Python whitespace to single spaces and trim; the rules' literal replacements;
// strip trailing spaces; append "." unless the text ends with one of the rules' endings.
// Throws Error for invalid UTF-8 (see validate_utf8).
std::string punc_norm(std::string_view text, const PunctuationRules &rules = english_punctuation());

} // namespace chatterbox::text
