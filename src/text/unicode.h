#pragma once
// Unicode helpers for the text front end: strict UTF-8 decoding and the exact character classes used by the
// reference Python code (str.isspace / str.islower / str.upper) and by HF tokenizers (Rust regex \w and \s).

#include <cstddef>
#include <string>
#include <string_view>

namespace chatterbox::text {

// One decoded code point and the number of bytes it occupies in the UTF-8 input.
struct CodePoint {
    char32_t value = 0;
    size_t size = 0;
};

// Decodes the code point starting at byte `offset` of `text` (offset < text.size()).
// Invalid UTF-8 (stray continuation bytes, truncated or overlong sequences, surrogates, > U+10FFFF) throws an Error
// naming `what`, the byte offset and the offending byte: the reference pipeline takes Python str, which can never
// hold such bytes (Python's strict UTF-8 decoder rejects exactly these sequences).
CodePoint decode_utf8_at(std::string_view text, size_t offset, std::string_view what);

// Throws like decode_utf8_at if `text` is not entirely valid UTF-8.
void validate_utf8(std::string_view text, std::string_view what);

// Appends the UTF-8 encoding of a valid code point.
void append_utf8(std::string &out, char32_t code_point);

// Python str.replace: every non-overlapping occurrence of `from` (non-empty), scanned left to right. Byte-wise
// matching is exact on valid UTF-8 when `from` is valid UTF-8: a match can never start inside a character.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

// Python str.isspace() for one character (what str.split() splits on): category Zs or bidi class WS, B or S.
bool is_python_space(char32_t c);

// Python `c.upper() if c.islower() else c` for one character, using full (multi-character) case mappings,
// e.g. U+00DF 'ß' -> "SS", U+FB01 'ﬁ' -> "FI". Returns the UTF-8 encoding.
std::string python_upper_if_lower(char32_t c);

// Rust regex crate (Unicode mode), as used by HF tokenizers' pre-tokenizers and added-token matching:
// \w = Alphabetic + Mark + Decimal_Number + Connector_Punctuation + Join_Control; \s = White_Space.
bool is_regex_word(char32_t c);
bool is_regex_space(char32_t c);

// Unicode general categories L* (\p{L}) and N* (\p{N}), as GPT-2's pre-tokenizer pattern uses them.
bool is_letter(char32_t c);
bool is_number(char32_t c);
// Unicode general category S* (math, currency, modifier and other symbols: "+", "$", "©", emoji).
bool is_symbol(char32_t c);

// Whether text holds a letter, digit or symbol: spaces, control and format characters (zero-width,
// bidi marks) and punctuation alone have nothing to say, and the model would only babble. Invalid
// UTF-8 is not judged here (true): the callers' decoding reports it.
bool has_something_to_say(std::string_view text);
// What front ends say when it is false.
constexpr const char *kNothingToSay =
    "the text has nothing to say: no letter, digit or symbol (only spaces, control or format characters, or "
    "punctuation)";

} // namespace chatterbox::text
