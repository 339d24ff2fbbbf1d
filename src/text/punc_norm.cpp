#include "text/punc_norm.h"

#include "core/string_match.h"
#include "text/unicode.h"

#include <utility>

namespace chatterbox::text {

namespace {

// " ".join(text.split()): words separated by Python whitespace, joined by single spaces.
std::string collapse_whitespace(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    bool pending_space = false;
    for (size_t offset = 0; offset < text.size();) {
        const CodePoint cp = decode_utf8_at(text, offset, "punc_norm");
        if (is_python_space(cp.value)) {
            pending_space = !out.empty();
        } else {
            if (pending_space) out.push_back(' ');
            pending_space = false;
            out.append(text, offset, cp.size);
        }
        offset += cp.size;
    }
    return out;
}

} // namespace

const PunctuationRules &english_punctuation() {
    static const PunctuationRules rules{{{"...", ", "},
                                         {"\u2026", ", "},
                                         {":", ","},
                                         {" - ", ", "},
                                         {";", ", "},
                                         {"\u2014", "-"},
                                         {"\u2013", "-"},
                                         {" ,", ","},
                                         {"\u201C", "\""},
                                         {"\u201D", "\""},
                                         {"\u2018", "'"},
                                         {"\u2019", "'"}},
                                        {".", "!", "?", "-", ","}};
    return rules;
}

const PunctuationRules &multilingual_punctuation() {
    static const PunctuationRules rules{english_punctuation().replacements,
                                        {".", "!", "?", "-", ",", "\u3001", "\uFF0C", "\u3002", "\uFF1F", "\uFF01"}};
    return rules;
}

// tts_turbo.py keeps English's list in its order, without three of its rules.
const PunctuationRules &turbo_punctuation() {
    static const PunctuationRules rules = [] {
        PunctuationRules turbo{{}, english_punctuation().sentence_enders};
        for (const auto &rule : english_punctuation().replacements)
            if (rule.first != "..." && rule.first != " - " && rule.first != ";") turbo.replacements.push_back(rule);
        return turbo;
    }();
    return rules;
}

std::string punc_norm(std::string_view text, const PunctuationRules &rules) {
    if (text.empty()) return std::string(kEmptyTextFallback);
    validate_utf8(text, "punc_norm");

    const CodePoint first = decode_utf8_at(text, 0, "punc_norm");
    std::string capitalised = python_upper_if_lower(first.value);
    capitalised.append(text.substr(first.size));

    std::string out = collapse_whitespace(capitalised);
    for (const auto &[from, to] : rules.replacements) out = replace_all(out, from, to);

    while (!out.empty() && out.back() == ' ') out.pop_back();
    bool ended = false;
    for (std::string_view ender : rules.sentence_enders) ended = ended || ends_with(out, ender);
    if (!ended) out.push_back('.');
    return out;
}

} // namespace chatterbox::text
