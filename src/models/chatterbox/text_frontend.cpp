#include "models/chatterbox/text_frontend.h"

#include "core/error.h"

namespace chatterbox {

namespace {

struct VariantText {
    Variant variant;
    const text::PunctuationRules &(*punctuation)();
    bool space_tokens; // EnTokenizer: every ' ' is the literal "[SPACE]" token
};

constexpr VariantText kVariantText[] = {
    {Variant::english, text::english_punctuation, true},
    {Variant::turbo, text::turbo_punctuation, false},
    {Variant::nano, text::turbo_punctuation, false},
};

const VariantText &variant_text(Variant variant) {
    for (const VariantText &v : kVariantText)
        if (v.variant == variant) return v;
    fail("the ", variant_name(variant), " variant's text front end is not supported yet (english, turbo and nano are)");
}

} // namespace

TextFrontEnd::TextFrontEnd(std::string_view tokenizer_json, const std::string &source, const t3::HParams &t3)
    : t3_(t3) {
    const VariantText &recipe = variant_text(t3.variant);
    punctuation_ = &recipe.punctuation();
    text::BpeTokenizer bpe = text::BpeTokenizer::from_json(tokenizer_json, source);
    if (recipe.space_tokens)
        english_ = std::make_unique<text::EnTokenizer>(std::move(bpe));
    else
        plain_ = std::make_unique<text::BpeTokenizer>(std::move(bpe));
    const size_t vocabulary = this->bpe().size();
    if (vocabulary > size_t(t3.text_vocab))
        fail(source, ": the tokenizer has ", vocabulary, " tokens, more than T3's text vocabulary (", t3.text_vocab,
             ")");
}

TextFrontEnd::~TextFrontEnd() = default;

const text::BpeTokenizer &TextFrontEnd::bpe() const { return english_ ? english_->bpe() : *plain_; }

std::vector<int32_t> TextFrontEnd::tokens(std::string_view text) const {
    return english_ ? english_->text_to_tokens(text) : plain_->encode(text);
}

std::vector<int32_t> TextFrontEnd::t3_tokens(std::string_view piece) const {
    const std::vector<int32_t> ids = tokens(text::punc_norm(piece, *punctuation_));
    if (!t3_.framed_text) return ids;
    return text::t3_text_tokens(ids, t3_.start_text_token, t3_.stop_text_token);
}

} // namespace chatterbox
