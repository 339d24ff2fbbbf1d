#include "text/mtl_tokenizer.h"

#include "core/error.h"
#include "text/japanese_reading.h"
#include "text/languages.h"
#include "text/mtl_normalize.h"
#include "text/unicode.h"
#include "text/word_segmenter.h"

#include <utf8proc.h>

namespace chatterbox::text {

namespace {

// Characters of category Lo: those the Cangjie step may code (text is valid UTF-8 here).
bool has_other_letter(std::string_view text) {
    for (size_t offset = 0; offset < text.size();) {
        const CodePoint cp = decode_utf8_at(text, offset, "Chinese text");
        if (utf8proc_category(static_cast<utf8proc_int32_t>(cp.value)) == UTF8PROC_CATEGORY_LO) return true;
        offset += cp.size;
    }
    return false;
}

} // namespace

MtlTokenizer::MtlTokenizer(BpeTokenizer tokenizer, std::optional<CangjieTable> cangjie)
    : tokenizer_(std::move(tokenizer)), cangjie_(std::move(cangjie)) {
    std::string missing;
    auto require = [&](const std::string &token) {
        if (!tokenizer_.token_to_id(token)) missing += concat(missing.empty() ? "" : ", ", token);
    };
    for (const char *token : {"[START]", "[STOP]", "[SPACE]"}) require(token);
    for (const Language &language : supported_languages()) require(concat("[", language.code, "]"));
    if (!missing.empty())
        fail(tokenizer_.source(), ": not a multilingual tokenizer (grapheme_mtl_merged_expanded_v1.json): no ",
             missing);
}

std::string MtlTokenizer::language_step(std::string_view text, std::string_view code) const {
    if (code == "zh") {
        if (!cangjie_ && has_other_letter(text))
            fail("Chinese text needs the Cangjie table (", kCangjieFile,
                 " from the official multilingual folder) and this model has none");
        // tokenizer.py: the words joined by spaces first (pkuseg there, jieba here: word_segmenter.h).
        const std::string words = segmented(text, chinese_segmenter());
        return cangjie_ ? cangjie_->convert(words) : words;
    }
    if (code == "ja") return japanese_hiragana(text);
    if (code == "ko") return korean_jamo(text);
    return std::string(text); // he, ru: the reference's optional steps, skipped without their packages
}

std::string MtlTokenizer::encoder_input(std::string_view text, std::string_view language) const {
    const Language &lang = find_language(language);
    const std::string stepped = language_step(nfkd(python_lower(text)), lang.code);
    return replace_all(concat("[", lang.code, "]", stepped), " ", "[SPACE]");
}

std::vector<int32_t> MtlTokenizer::text_to_tokens(std::string_view text, std::string_view language) const {
    return tokenizer_.encode(encoder_input(text, language));
}

} // namespace chatterbox::text
