// libFuzzer: the text front end on arbitrary bytes: punctuation normalisation (the three variants'
// rules) and the sentence splitter (sentences only, and pieces under a length budget taken from
// the first byte).
#include "fuzz_support.h"
#include "text/punc_norm.h"
#include "text/sentence_splitter.h"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace chatterbox;
    if (size == 0) return 0;
    const size_t max_length = data[0]; // 0 must be refused, small budgets cut words into characters
    const std::string_view text = fuzz::as_text(data + 1, size - 1);
    for (const text::PunctuationRules *rules :
         {&text::english_punctuation(), &text::multilingual_punctuation(), &text::turbo_punctuation()})
        fuzz::expect_refusal_or_success([&] {
            if (text::punc_norm(text, *rules).empty()) std::abort(); // never empty: it appends a period
        });
    fuzz::expect_refusal_or_success([&] { text::split_sentences(text); });
    text::SplitOptions options;
    options.max_length = max_length;
    fuzz::expect_refusal_or_success([&] {
        for (const text::TextPiece &piece : text::split_text(text, options)) {
            // Never empty, never over the budget (code points: the default measure).
            const size_t code_points = std::count_if(piece.text.begin(), piece.text.end(), [](char c) {
                return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
            });
            if (piece.text.empty() || code_points > max_length) std::abort();
        }
    });
    return 0;
}
