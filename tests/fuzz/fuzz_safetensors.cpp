// libFuzzer: a .safetensors file (header length, JSON header, offsets) through SafetensorsFile.
#include "core/safetensors.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace chatterbox;
    const std::string &path = fuzz::write_scratch(data, size, ".safetensors");
    fuzz::expect_refusal_or_success([&] {
        const SafetensorsFile file(path);
        // Every accepted view lies inside the mapping: touch its first and last byte.
        volatile uint8_t sink = 0;
        for (const TensorView &t : file.tensors())
            if (t.nbytes)
                sink =
                    sink + static_cast<const uint8_t *>(t.data)[0] + static_cast<const uint8_t *>(t.data)[t.nbytes - 1];
    });
    return 0;
}
