#pragma once
// A variant's text front end (spec text.md): punctuation normalisation, the tokenizer, and the
// framing T3 reads. English: tts.py's punc_norm, the grapheme BPE with "[SPACE]" tokens
// (EnTokenizer), [START] ids [STOP]. Multilingual: mtl_tts.py's punc_norm, MTLTokenizer (lower,
// NFKD, the language's step, the "[lang]" tag, "[SPACE]"; text/mtl_tokenizer.h), [START] ids [STOP].
// Turbo / Nano: tts_turbo.py's lighter punc_norm, GPT-2's
// byte-level BPE (paralinguistic tags such as "[laugh]" are added tokens), the bare ids.
// Which is which is the variant's record (variant_spec.h); the framing tokens come from T3's
// hyper-parameters.

#include "models/chatterbox/t3/hparams.h"
#include "text/bpe_tokenizer.h"
#include "text/mtl_tokenizer.h"
#include "text/punc_norm.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chatterbox {

class TextFrontEnd {
  public:
    // tokenizer_json: the model's tokenizer.json document; source names it in errors. Throws Error
    // for a tokenizer the variant cannot use (English without [START] / [STOP], ...). cangjie_json:
    // the multilingual model's Cangjie5_TC.json, if it has one (only Chinese needs it).
    TextFrontEnd(std::string_view tokenizer_json, const std::string &source, const t3::HParams &t3,
                 const std::optional<std::string> &cangjie_json = std::nullopt);
    ~TextFrontEnd();
    TextFrontEnd(const TextFrontEnd &) = delete;
    TextFrontEnd &operator=(const TextFrontEnd &) = delete;

    // What T3 reads for one piece of text: punc_norm, tokens, framing. language: the multilingual
    // model's (text/languages.h), required there; the other variants take none ("").
    std::vector<int32_t> t3_tokens(std::string_view piece, std::string_view language = {}) const;
    // Tokens of text as it is (no normalisation, no framing): the measure of the sentence splitter.
    std::vector<int32_t> tokens(std::string_view text, std::string_view language = {}) const;
    // Throws InvalidArgument unless the variant takes this language: one of the supported ones for
    // multilingual (the error lists them), none for the others.
    void check_language(std::string_view language) const;
    bool has_languages() const { return multilingual_ != nullptr; }
    // Tokens the framing adds around a piece's own.
    int framing_tokens() const { return t3_.framed_text ? 2 : 0; }

    const text::PunctuationRules &punctuation() const { return *punctuation_; }
    const text::BpeTokenizer &bpe() const;

  private:
    t3::HParams t3_;
    const text::PunctuationRules *punctuation_;
    std::unique_ptr<text::EnTokenizer> english_;       // the English tokenizer, or
    std::unique_ptr<text::MtlTokenizer> multilingual_; // the multilingual one, or
    std::unique_ptr<text::BpeTokenizer> plain_;        // one whose encode() is the ids as they are
};

} // namespace chatterbox
