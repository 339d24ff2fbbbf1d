#include "text/unicode.h"

#include "core/error.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>

namespace chatterbox::text {

namespace {

// Lower-case characters whose Python str.upper() is several characters (SpecialCasing.txt, unconditional
// mappings); utf8proc only knows the simple one-to-one mappings. Sorted by code point.
struct SpecialUpper {
    char32_t lower;
    std::array<char32_t, 3> upper; // unused slots are 0
};
constexpr SpecialUpper kSpecialUpper[] = {
    {0x00DF, {0x0053, 0x0053}},         {0x0149, {0x02BC, 0x004E}},         {0x01F0, {0x004A, 0x030C}},
    {0x0390, {0x0399, 0x0308, 0x0301}}, {0x03B0, {0x03A5, 0x0308, 0x0301}}, {0x0587, {0x0535, 0x0552}},
    {0x1E96, {0x0048, 0x0331}},         {0x1E97, {0x0054, 0x0308}},         {0x1E98, {0x0057, 0x030A}},
    {0x1E99, {0x0059, 0x030A}},         {0x1E9A, {0x0041, 0x02BE}},         {0x1F50, {0x03A5, 0x0313}},
    {0x1F52, {0x03A5, 0x0313, 0x0300}}, {0x1F54, {0x03A5, 0x0313, 0x0301}}, {0x1F56, {0x03A5, 0x0313, 0x0342}},
    {0x1F80, {0x1F08, 0x0399}},         {0x1F81, {0x1F09, 0x0399}},         {0x1F82, {0x1F0A, 0x0399}},
    {0x1F83, {0x1F0B, 0x0399}},         {0x1F84, {0x1F0C, 0x0399}},         {0x1F85, {0x1F0D, 0x0399}},
    {0x1F86, {0x1F0E, 0x0399}},         {0x1F87, {0x1F0F, 0x0399}},         {0x1F90, {0x1F28, 0x0399}},
    {0x1F91, {0x1F29, 0x0399}},         {0x1F92, {0x1F2A, 0x0399}},         {0x1F93, {0x1F2B, 0x0399}},
    {0x1F94, {0x1F2C, 0x0399}},         {0x1F95, {0x1F2D, 0x0399}},         {0x1F96, {0x1F2E, 0x0399}},
    {0x1F97, {0x1F2F, 0x0399}},         {0x1FA0, {0x1F68, 0x0399}},         {0x1FA1, {0x1F69, 0x0399}},
    {0x1FA2, {0x1F6A, 0x0399}},         {0x1FA3, {0x1F6B, 0x0399}},         {0x1FA4, {0x1F6C, 0x0399}},
    {0x1FA5, {0x1F6D, 0x0399}},         {0x1FA6, {0x1F6E, 0x0399}},         {0x1FA7, {0x1F6F, 0x0399}},
    {0x1FB2, {0x1FBA, 0x0399}},         {0x1FB3, {0x0391, 0x0399}},         {0x1FB4, {0x0386, 0x0399}},
    {0x1FB6, {0x0391, 0x0342}},         {0x1FB7, {0x0391, 0x0342, 0x0399}}, {0x1FC2, {0x1FCA, 0x0399}},
    {0x1FC3, {0x0397, 0x0399}},         {0x1FC4, {0x0389, 0x0399}},         {0x1FC6, {0x0397, 0x0342}},
    {0x1FC7, {0x0397, 0x0342, 0x0399}}, {0x1FD2, {0x0399, 0x0308, 0x0300}}, {0x1FD3, {0x0399, 0x0308, 0x0301}},
    {0x1FD6, {0x0399, 0x0342}},         {0x1FD7, {0x0399, 0x0308, 0x0342}}, {0x1FE2, {0x03A5, 0x0308, 0x0300}},
    {0x1FE3, {0x03A5, 0x0308, 0x0301}}, {0x1FE4, {0x03A1, 0x0313}},         {0x1FE6, {0x03A5, 0x0342}},
    {0x1FE7, {0x03A5, 0x0308, 0x0342}}, {0x1FF2, {0x1FFA, 0x0399}},         {0x1FF3, {0x03A9, 0x0399}},
    {0x1FF4, {0x038F, 0x0399}},         {0x1FF6, {0x03A9, 0x0342}},         {0x1FF7, {0x03A9, 0x0342, 0x0399}},
    {0xFB00, {0x0046, 0x0046}},         {0xFB01, {0x0046, 0x0049}},         {0xFB02, {0x0046, 0x004C}},
    {0xFB03, {0x0046, 0x0046, 0x0049}}, {0xFB04, {0x0046, 0x0046, 0x004C}}, {0xFB05, {0x0053, 0x0054}},
    {0xFB06, {0x0053, 0x0054}},         {0xFB13, {0x0544, 0x0546}},         {0xFB14, {0x0544, 0x0535}},
    {0xFB15, {0x0544, 0x053B}},         {0xFB16, {0x054E, 0x0546}},         {0xFB17, {0x0544, 0x053D}},
};

// Other_Alphabetic characters outside the letter/mark categories (circled and squared Latin letters, category So).
struct Range {
    char32_t first;
    char32_t last;
};
constexpr Range kAlphabeticSymbols[] = {{0x24B6, 0x24E9}, {0x1F130, 0x1F149}, {0x1F150, 0x1F169}, {0x1F170, 0x1F189}};

constexpr char32_t kWhiteSpace[] = {0x0009, 0x000A, 0x000B, 0x000C, 0x000D, 0x0020, 0x0085, 0x00A0, 0x1680,
                                    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
                                    0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};

constexpr char32_t kMaxCodePoint = 0x10FFFF;

// Upper-case hexadecimal with at least `digits` digits, for error messages.
std::string hex(uint32_t value, int digits) {
    static constexpr char kDigits[] = "0123456789ABCDEF";
    std::string out;
    for (; value != 0 || digits > 0; value >>= 4, --digits) out.insert(out.begin(), kDigits[value & 15]);
    return out;
}

const utf8proc_property_t &properties(char32_t c) { return *utf8proc_get_property(static_cast<utf8proc_int32_t>(c)); }

} // namespace

CodePoint decode_utf8_at(std::string_view text, size_t offset, std::string_view what) {
    utf8proc_int32_t value = -1;
    const auto *bytes = reinterpret_cast<const utf8proc_uint8_t *>(text.data()) + offset;
    const utf8proc_ssize_t size = utf8proc_iterate(bytes, static_cast<utf8proc_ssize_t>(text.size() - offset), &value);
    if (size <= 0 || value < 0) {
        fail(what, ": invalid UTF-8 at byte offset ", offset, " (byte 0x",
             hex(static_cast<unsigned char>(text[offset]), 2), "); text must be valid UTF-8");
    }
    return {static_cast<char32_t>(value), static_cast<size_t>(size)};
}

void validate_utf8(std::string_view text, std::string_view what) {
    for (size_t offset = 0; offset < text.size();) {
        offset += decode_utf8_at(text, offset, what).size;
    }
}

void append_utf8(std::string &out, char32_t code_point) {
    if (code_point > kMaxCodePoint || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
        fail("append_utf8: U+", hex(code_point, 4), " is not a Unicode scalar value");
    }
    utf8proc_uint8_t buffer[4];
    const utf8proc_ssize_t size = utf8proc_encode_char(static_cast<utf8proc_int32_t>(code_point), buffer);
    out.append(reinterpret_cast<const char *>(buffer), static_cast<size_t>(size));
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    if (from.empty()) fail("replace_all: the pattern must not be empty");
    std::string out;
    out.reserve(text.size());
    size_t start = 0;
    for (size_t found = text.find(from); found != std::string_view::npos; found = text.find(from, start)) {
        out.append(text, start, found - start).append(to);
        start = found + from.size();
    }
    out.append(text, start);
    return out;
}

bool is_python_space(char32_t c) {
    if (c > kMaxCodePoint) return false;
    const utf8proc_property_t &p = properties(c);
    return p.category == UTF8PROC_CATEGORY_ZS || p.bidi_class == UTF8PROC_BIDI_CLASS_WS ||
           p.bidi_class == UTF8PROC_BIDI_CLASS_B || p.bidi_class == UTF8PROC_BIDI_CLASS_S;
}

std::string python_upper_if_lower(char32_t c) {
    std::string out;
    const auto *special = std::lower_bound(std::begin(kSpecialUpper), std::end(kSpecialUpper), c,
                                           [](const SpecialUpper &entry, char32_t key) { return entry.lower < key; });
    if (special != std::end(kSpecialUpper) && special->lower == c) {
        for (char32_t upper : special->upper) {
            if (upper != 0) append_utf8(out, upper);
        }
        return out;
    }
    // utf8proc_islower: has an upper-case mapping and no lower-case one, i.e. a lower-case letter whose upper() differs
    // (characters that are Lowercase without any mapping, e.g. U+00AA, map to themselves either way).
    const bool lower = c <= kMaxCodePoint && utf8proc_islower(static_cast<utf8proc_int32_t>(c));
    append_utf8(out, lower ? static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))) : c);
    return out;
}

bool is_regex_word(char32_t c) {
    if (c > kMaxCodePoint) return false;
    if (is_letter(c)) return true;
    switch (properties(c).category) {
    case UTF8PROC_CATEGORY_NL: // letter numbers are Alphabetic
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        break;
    }
    if (c == 0x200C || c == 0x200D) return true; // Join_Control (ZWNJ, ZWJ)
    return std::any_of(std::begin(kAlphabeticSymbols), std::end(kAlphabeticSymbols),
                       [c](const Range &range) { return c >= range.first && c <= range.last; });
}

bool is_letter(char32_t c) {
    if (c > kMaxCodePoint) return false;
    switch (properties(c).category) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
        return true;
    default:
        return false;
    }
}

bool is_number(char32_t c) {
    if (c > kMaxCodePoint) return false;
    const auto category = properties(c).category;
    return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL || category == UTF8PROC_CATEGORY_NO;
}

bool is_symbol(char32_t c) {
    if (c > kMaxCodePoint) return false;
    const auto category = properties(c).category;
    return category == UTF8PROC_CATEGORY_SM || category == UTF8PROC_CATEGORY_SC || category == UTF8PROC_CATEGORY_SK ||
           category == UTF8PROC_CATEGORY_SO;
}

bool has_something_to_say(std::string_view text) {
    for (size_t at = 0; at < text.size();) {
        CodePoint c;
        try {
            c = decode_utf8_at(text, at, "text");
        } catch (const Error &) {
            return true;
        }
        if (is_letter(c.value) || is_number(c.value) || is_symbol(c.value)) return true;
        at += c.size;
    }
    return false;
}

bool is_regex_space(char32_t c) {
    return std::find(std::begin(kWhiteSpace), std::end(kWhiteSpace), c) != std::end(kWhiteSpace);
}

} // namespace chatterbox::text
