#include "text/mtl_normalize.h"

#include "core/error.h"
#include "text/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>
#include <vector>

namespace chatterbox::text {

namespace {

std::vector<char32_t> code_points(std::string_view text, std::string_view what) {
    std::vector<char32_t> out;
    out.reserve(text.size());
    for (size_t offset = 0; offset < text.size();) {
        const CodePoint cp = decode_utf8_at(text, offset, what);
        out.push_back(cp.value);
        offset += cp.size;
    }
    return out;
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

// Unicode "Cased": lower- or upper-case letters, title case (Python's _PyUnicode_IsCased).
bool is_cased(char32_t c) {
    return utf8proc_islower(static_cast<utf8proc_int32_t>(c)) || utf8proc_isupper(static_cast<utf8proc_int32_t>(c)) ||
           category(c) == UTF8PROC_CATEGORY_LT;
}

// Unicode "Case_Ignorable": marks, format characters, modifiers, and the Word_Break MidLetter /
// MidNumLet / Single_Quote characters (utf8proc has no such property, so they are listed).
bool is_case_ignorable(char32_t c) {
    switch (category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
        return true;
    default:
        break;
    }
    switch (c) {
    case U'\'':
    case U'.':
    case U':':
    case U'\u00B7':
    case U'\u0387':
    case U'\u05F4':
    case U'\u2018':
    case U'\u2019':
    case U'\u2024':
    case U'\u2027':
    case U'\uFE13':
    case U'\uFE52':
    case U'\uFE55':
    case U'\uFF07':
    case U'\uFF0E':
    case U'\uFF1A':
        return true;
    default:
        return false;
    }
}

// Python's final_sigma(): a cased letter before position i and none after it (case-ignorable
// characters skipped both ways).
bool is_final_sigma(const std::vector<char32_t> &cps, size_t i) {
    size_t j = i;
    while (j > 0 && is_case_ignorable(cps[j - 1])) --j;
    if (j == 0 || !is_cased(cps[j - 1])) return false;
    size_t k = i + 1;
    while (k < cps.size() && is_case_ignorable(cps[k])) ++k;
    return k == cps.size() || !is_cased(cps[k]);
}

} // namespace

std::string python_lower(std::string_view text) {
    const std::vector<char32_t> cps = code_points(text, "lower-casing");
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < cps.size(); ++i) {
        const char32_t c = cps[i];
        if (c == U'\u0130') {
            out += "i\u0307";
        } else if (c == U'\u03A3') {
            out += is_final_sigma(cps, i) ? "\u03C2" : "\u03C3";
        } else {
            append_utf8(out, char32_t(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
        }
    }
    return out;
}

std::string nfkd(std::string_view text) {
    validate_utf8(text, "NFKD normalisation");
    utf8proc_uint8_t *mapped = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()), utf8proc_ssize_t(text.size()), &mapped,
                     utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_DECOMPOSE));
    std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
    if (n < 0) fail("NFKD normalisation failed: ", utf8proc_errmsg(n));
    return std::string(reinterpret_cast<const char *>(mapped), size_t(n));
}

std::string python_strip(std::string_view text) {
    const std::vector<char32_t> cps = code_points(text, "strip");
    size_t begin = 0, end = cps.size();
    while (begin < end && is_python_space(cps[begin])) ++begin;
    while (end > begin && is_python_space(cps[end - 1])) --end;
    std::string out;
    for (size_t i = begin; i < end; ++i) append_utf8(out, cps[i]);
    return out;
}

std::string korean_jamo(std::string_view text) {
    // The reference's range runs to U+D7AF, past the last syllable U+D7A3; kept as it is.
    constexpr char32_t kFirstSyllable = 0xAC00, kLastSyllable = 0xD7AF;
    constexpr int kVowels = 21, kTails = 28;
    std::string out;
    for (char32_t c : code_points(text, "Korean text")) {
        if (c < kFirstSyllable || c > kLastSyllable) {
            append_utf8(out, c);
            continue;
        }
        const int s = int(c - kFirstSyllable);
        append_utf8(out, char32_t(0x1100 + s / (kVowels * kTails)));
        append_utf8(out, char32_t(0x1161 + (s % (kVowels * kTails)) / kTails));
        if (s % kTails > 0) append_utf8(out, char32_t(0x11A7 + s % kTails));
    }
    return python_strip(out);
}

} // namespace chatterbox::text
