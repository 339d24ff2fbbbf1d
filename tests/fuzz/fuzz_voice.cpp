// libFuzzer: a saved voice file (GGUF with the voice's tensors, format marker, version, checksum)
// through is_voice_file and load_voice.
#include "fuzz_support.h"
#include "models/chatterbox/voice.h"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    chatterbox::fuzz::silence_ggml_log();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace chatterbox;
    const std::string &path = fuzz::write_scratch(data, size, ".voice");
    fuzz::expect_refusal_or_success([&] { is_voice_file(path); });
    fuzz::expect_refusal_or_success([&] { load_voice(path); });
    return 0;
}
