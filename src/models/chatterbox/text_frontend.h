#pragma once
// A variant's text front end (spec text.md): punctuation normalisation, the tokenizer, and the
// framing T3 reads. English: tts.py's punc_norm, the grapheme BPE with "[SPACE]" tokens
// (EnTokenizer), [START] ids [STOP]. Turbo / Nano: tts_turbo.py's lighter punc_norm, GPT-2's
// byte-level BPE (paralinguistic tags such as "[laugh]" are added tokens), the bare ids.
// Which is which is the table in text_frontend.cpp, keyed by the model's variant; the framing
// tokens come from T3's hyper-parameters.

#include "models/chatterbox/t3/hparams.h"
#include "text/bpe_tokenizer.h"
#include "text/punc_norm.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace chatterbox {

class TextFrontEnd {
  public:
    // tokenizer_json: the model's tokenizer.json document; source names it in errors. Throws Error
    // for a tokenizer the variant cannot use (English without [START] / [STOP], ...).
    TextFrontEnd(std::string_view tokenizer_json, const std::string &source, const t3::HParams &t3);
    ~TextFrontEnd();
    TextFrontEnd(const TextFrontEnd &) = delete;
    TextFrontEnd &operator=(const TextFrontEnd &) = delete;

    // What T3 reads for one piece of text: punc_norm, tokens, framing.
    std::vector<int32_t> t3_tokens(std::string_view piece) const;
    // Tokens of text as it is (no normalisation, no framing): the measure of the sentence splitter.
    std::vector<int32_t> tokens(std::string_view text) const;
    // Tokens the framing adds around a piece's own.
    int framing_tokens() const { return t3_.framed_text ? 2 : 0; }

    const text::PunctuationRules &punctuation() const { return *punctuation_; }
    const text::BpeTokenizer &bpe() const;

  private:
    t3::HParams t3_;
    const text::PunctuationRules *punctuation_;
    std::unique_ptr<text::EnTokenizer> english_; // the English tokenizer, or
    std::unique_ptr<text::BpeTokenizer> plain_;  // one whose encode() is the ids as they are
};

} // namespace chatterbox
