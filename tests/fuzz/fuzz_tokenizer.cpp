// libFuzzer: the text tokenizers. Input = TEXT, or JSON "\0" TEXT:
//   TEXT alone:    arbitrary bytes (valid UTF-8 or not) through the English tokenizer (EnTokenizer,
//                  the tokenizer.json the project embeds; then decoding what it encoded) when the
//                  first byte is odd, else GPT-2's (Turbo's folder in tests/data): one tokenizer per
//                  input keeps each execution short;
//   JSON \0 TEXT:  JSON as a tokenizer.json (BpeTokenizer::from_json); when it loads, TEXT is encoded with it.
#include "fuzz_support.h"
#include "text/bpe_tokenizer.h"

#include <cstring>
#include <vector>

namespace chatterbox::synthetic {
extern const char *const kEnglishTokenizerJson;
}

namespace {

using chatterbox::text::BpeTokenizer;
using chatterbox::text::EnTokenizer;

const EnTokenizer &english() {
    static const EnTokenizer tokenizer(
        BpeTokenizer::from_json(chatterbox::synthetic::kEnglishTokenizerJson, "embedded English tokenizer.json"));
    return tokenizer;
}

const BpeTokenizer &gpt2() {
    static const BpeTokenizer tokenizer = BpeTokenizer::from_folder(CHATTERBOX_TEST_DATA "/turbo/tokenizer");
    return tokenizer;
}

void encode(std::string_view text) {
    if (text.empty()) return;
    if (text[0] & 1)
        chatterbox::fuzz::expect_refusal_or_success([&] {
            const std::vector<int32_t> ids = english().text_to_tokens(text);
            english().decode(ids); // every id it made is its own
        });
    else
        chatterbox::fuzz::expect_refusal_or_success([&] {
            for (const int32_t id : gpt2().encode(text))
                if (!gpt2().id_to_token(id)) std::abort(); // an id outside the vocabulary
        });
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    english();
    gpt2();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view input = chatterbox::fuzz::as_text(data, size);
    const size_t split = input.find('\0');
    if (split == std::string_view::npos) {
        encode(input);
        return 0;
    }
    const std::string_view json = input.substr(0, split), text = input.substr(split + 1);
    chatterbox::fuzz::expect_refusal_or_success([&] {
        const BpeTokenizer tokenizer = BpeTokenizer::from_json(json, "fuzz input");
        for (const int32_t id : tokenizer.encode(text))
            if (!tokenizer.id_to_token(id)) std::abort();
    });
    return 0;
}
