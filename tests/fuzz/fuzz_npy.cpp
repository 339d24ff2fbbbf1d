// libFuzzer: a NumPy .npy file through read_npy and its typed views.
#include "core/npy.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace chatterbox;
    const std::string &path = fuzz::write_scratch(data, size, ".npy");
    fuzz::expect_refusal_or_success([&] {
        const NpyArray array = read_npy(path);
        fuzz::expect_refusal_or_success([&] { array.f32(); });
        fuzz::expect_refusal_or_success([&] { array.i64(); });
    });
    return 0;
}
