#pragma once
// The Unicode steps of the multilingual tokenizer (MTLTokenizer.preprocess_text and its language
// steps, spec text.md §3), as Python does them.

#include <string>
#include <string_view>

namespace chatterbox::text {

// Python str.lower(): the one full lower-case mapping (U+0130 'İ' -> "i\u0307"), the final-sigma
// rule (Σ after a cased letter and before none -> 'ς'), every other character by its simple mapping.
// Throws Error for invalid UTF-8.
std::string python_lower(std::string_view text);

// unicodedata.normalize("NFKD", text). Throws Error for invalid UTF-8.
std::string nfkd(std::string_view text);

// Python str.strip(): leading and trailing str.isspace() characters removed.
std::string python_strip(std::string_view text);

// korean_normalize: precomposed Hangul syllables (U+AC00-U+D7AF, the reference's range) as conjoining jamo (L V [T]),
// then strip(). After NFKD no syllable is left, so in the pipeline this is the strip.
std::string korean_jamo(std::string_view text);

} // namespace chatterbox::text
