#pragma once
// English punctuation normalisation, exactly as the reference `punc_norm` (chatterbox/tts.py).

#include <string>
#include <string_view>

namespace chatterbox::text {

// The reference's replacement for empty input.
inline constexpr std::string_view kEmptyTextFallback = "You need to add some text for me to talk.";

// In order: empty -> kEmptyTextFallback; upper-case the first character if it is lower-case (Python full case
// mapping); collapse runs of Python whitespace to single spaces and trim; literal replacements ("..." -> ", ",
// "…" -> ", ", ":" -> ",", " - " -> ", ", ";" -> ", ", em/en dash -> "-", " ," -> ",", curly quotes -> straight);
// strip trailing spaces; append "." unless the text ends with one of . ! ? - ,
// Throws Error for invalid UTF-8 (see validate_utf8).
std::string punc_norm(std::string_view text);

} // namespace chatterbox::text
