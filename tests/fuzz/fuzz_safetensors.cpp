// libFuzzer: a .safetensors file (header length, JSON header, offsets) through SafetensorsFile.
#include "core/safetensors.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace chatterbox;
    const std::string &path = fuzz::write_scratch(data, size, ".safetensors");
    fuzz::expect_refusal_or_success([&] {
        const SafetensorsFile file(path);
        fuzz::touch_views(file.tensors());
    });
    return 0;
}
