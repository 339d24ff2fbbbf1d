#include "models/chatterbox/text_frontend.h"

#include "core/error.h"
#include "models/chatterbox/variant_spec.h"
#include "text/languages.h"

namespace chatterbox {

TextFrontEnd::TextFrontEnd(std::string_view tokenizer_json, const std::string &source, const t3::HParams &t3,
                           const std::optional<std::string> &cangjie_json)
    : t3_(t3) {
    const VariantSpec &recipe = variant_spec(t3.variant);
    punctuation_ = &recipe.punctuation();
    text::BpeTokenizer bpe = text::BpeTokenizer::from_json(tokenizer_json, source);
    switch (recipe.tokenizer) {
    case TextTokenizer::english:
        english_ = std::make_unique<text::EnTokenizer>(std::move(bpe));
        break;
    case TextTokenizer::multilingual: {
        std::optional<text::CangjieTable> cangjie;
        if (cangjie_json) cangjie = text::CangjieTable::from_json(*cangjie_json, text::kCangjieFile);
        multilingual_ = std::make_unique<text::MtlTokenizer>(std::move(bpe), std::move(cangjie));
        break;
    }
    case TextTokenizer::plain:
        plain_ = std::make_unique<text::BpeTokenizer>(std::move(bpe));
        break;
    }
    const size_t vocabulary = this->bpe().size();
    if (vocabulary > size_t(t3.text_vocab))
        fail(source, ": the tokenizer has ", vocabulary, " tokens, more than T3's text vocabulary (", t3.text_vocab,
             ")");
}

TextFrontEnd::~TextFrontEnd() = default;

const text::BpeTokenizer &TextFrontEnd::bpe() const {
    return english_ ? english_->bpe() : multilingual_ ? multilingual_->bpe() : *plain_;
}

void TextFrontEnd::check_language(std::string_view language) const {
    try {
        if (multilingual_) {
            text::find_language(language);
        } else if (!language.empty()) {
            fail("the ", t3_.variant, " model takes no language (\"", language,
                 "\"): languages are the multilingual model's (", text::language_list(), ")");
        }
    } catch (const Error &error) {
        throw InvalidArgument(error.what());
    }
}

std::vector<int32_t> TextFrontEnd::tokens(std::string_view text, std::string_view language) const {
    check_language(language);
    if (multilingual_) return multilingual_->text_to_tokens(text, language);
    return english_ ? english_->text_to_tokens(text) : plain_->encode(text);
}

std::vector<int32_t> TextFrontEnd::t3_tokens(std::string_view piece, std::string_view language) const {
    const std::vector<int32_t> ids = tokens(text::punc_norm(piece, *punctuation_), language);
    if (!t3_.framed_text) return ids;
    return text::t3_text_tokens(ids, t3_.start_text_token, t3_.stop_text_token);
}

} // namespace chatterbox
