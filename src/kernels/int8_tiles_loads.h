#pragma once
// Unaligned scalar loads for the instruction-set files of the int8 tile kernels. `static`: each file
// compiles its own copy with its own flags, so the linker cannot hand an AVX2 caller an AVX-512 copy
// (int8_tiles_kernels.h).

#include <cstdint>
#include <cstring>

namespace chatterbox::kernels::int8_tiles {

static inline int32_t load_i32(const void *p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

static inline float load_f32(const void *p) {
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

} // namespace chatterbox::kernels::int8_tiles
