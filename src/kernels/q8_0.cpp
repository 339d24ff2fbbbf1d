#include "kernels/q8_0.h"

#include "kernels/q8_0_kernels.h"

#include <cstring>

namespace chatterbox::kernels {

namespace {

using q8_0::kSubBlock;
using q8_0::kSubBlocks;

// ggml's block_q8_0: f16 d, then 32 int8 values.
constexpr size_t kQ8BlockBytes = 34, kQ8Quants = 2;

// Column n (0 .. 15) of block b's tile from that column's row of q8_0 blocks: four values at a time,
// each offset by 128 (its sign bit flipped).
void pack_column(const uint8_t *row, int64_t b, int64_t n, uint8_t *tile) {
    for (int64_t j = 0; j < kSubBlocks; ++j) {
        const uint8_t *block = row + (b * kSubBlocks + j) * kQ8BlockBytes;
        std::memcpy(tile + q8_0::kDOffset + 32 * j + 2 * n, block, 2);
        for (int64_t chunk = 0; chunk < kSubBlock / 4; ++chunk) {
            uint32_t values;
            std::memcpy(&values, block + kQ8Quants + 4 * chunk, 4);
            values ^= 0x80808080u;
            std::memcpy(tile + q8_0::kQuantsOffset + (kSubBlock / 4 * j + chunk) * 64 + n * 4, &values, 4);
        }
    }
}

const int8_tiles::Kernels *isa_kernels(Int8Isa isa) {
#if defined(__x86_64__)
    return isa == Int8Isa::avx512_vnni ? &q8_0::avx512_vnni_kernels() : &q8_0::avx2_kernels();
#else
    (void)isa;
    return nullptr;
#endif
}

#if defined(__x86_64__)
constexpr auto quantize = q8_0::quantize_row;
#else
constexpr void (*quantize)(const float *, int64_t, uint8_t *) = nullptr; // the products are x86 only
#endif

} // namespace

int64_t q8_0::activation_row_bytes(int64_t k) { return k + k / kSubBlock * (4 + 4); }

const TileFormat &q8_0_format() {
    static const TileFormat format{{"q8_0_avx2", "q8_0_avx512_vnni"},
                                   "q8_0.quantize",
                                   "q8_0.matmul",
                                   GGML_TYPE_Q8_0,
                                   kQ8BlockBytes,
                                   q8_0::kTileBytes,
                                   q8_0::activation_row_bytes,
                                   quantize,
                                   pack_column,
                                   isa_kernels};
    return format;
}

const TiledKernel &q8_0_kernel(Int8Isa isa) {
    static const TiledKernel avx512_vnni(q8_0_format(), Int8Isa::avx512_vnni), avx2(q8_0_format(), Int8Isa::avx2);
    return isa == Int8Isa::avx512_vnni ? avx512_vnni : avx2;
}

} // namespace chatterbox::kernels
