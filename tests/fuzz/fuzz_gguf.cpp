// libFuzzer: a GGUF file through GgufFile (ggml's gguf reader, the tensor bounds, the project's
// name and rank arrays) and every typed getter on every key.
#include "core/gguf_file.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    chatterbox::fuzz::silence_ggml_log();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace chatterbox;
    const std::string &path = fuzz::write_scratch(data, size, ".gguf");
    fuzz::expect_refusal_or_success([&] {
        const GgufFile file(path);
        fuzz::touch_views(file.tensors());
        for (const std::string &key : file.keys()) {
            // A getter for the wrong type must refuse, never crash.
            fuzz::expect_refusal_or_success([&] { file.get_string(key); });
            fuzz::expect_refusal_or_success([&] { file.get_int(key); });
            fuzz::expect_refusal_or_success([&] { file.get_float(key); });
            fuzz::expect_refusal_or_success([&] { file.get_string_array(key); });
            fuzz::expect_refusal_or_success([&] { file.get_int_array(key); });
        }
    });
    return 0;
}
