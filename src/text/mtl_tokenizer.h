#pragma once
// Chatterbox Multilingual's tokenizer (tokenizer.py MTLTokenizer, spec text.md §3), over the grapheme
// BPE of grapheme_mtl_merged_expanded_v1.json:
//   lower() -> NFKD -> the language's step -> "[lang]" prefix -> ' ' as "[SPACE]" -> BPE.
// Language steps: zh words joined by spaces (word_segmenter.h), then Cangjie codes (cangjie.h); ja kanji
// as hiragana (japanese_reading.h); ko Hangul as conjoining jamo (mtl_normalize.h). he and ru have
// none: the reference's steps for them need optional packages (dicta_onnx, russian_text_stresser) and
// are skipped without them, as here.

#include "text/bpe_tokenizer.h"
#include "text/cangjie.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chatterbox::text {

class MtlTokenizer {
  public:
    // Throws unless the vocabulary holds "[START]", "[STOP]", "[SPACE]" and every supported
    // language's tag. cangjie: the Chinese table (Cangjie5_TC.json), if the model has one.
    MtlTokenizer(BpeTokenizer tokenizer, std::optional<CangjieTable> cangjie);

    // The text BPE reads ("[fr]bonjour[SPACE]..."). Apply punc_norm first, as mtl_tts.py does.
    // Throws Error for an unsupported language (listing the supported ones), invalid UTF-8, or
    // Chinese characters (category Lo) without the Cangjie table (the reference would pass them
    // through with a warning).
    std::string encoder_input(std::string_view text, std::string_view language) const;
    // MTLTokenizer.text_to_tokens(text, language_id).
    std::vector<int32_t> text_to_tokens(std::string_view text, std::string_view language) const;

    const BpeTokenizer &bpe() const { return tokenizer_; }
    bool has_cangjie() const { return cangjie_.has_value(); }

  private:
    std::string language_step(std::string_view text, std::string_view code) const;

    BpeTokenizer tokenizer_;
    std::optional<CangjieTable> cangjie_;
};

} // namespace chatterbox::text
