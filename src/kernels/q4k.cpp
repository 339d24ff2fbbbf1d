#include "kernels/q4k.h"

#include "kernels/q4k_kernels.h"

#include <cstring>

namespace chatterbox::kernels {

namespace {

using q4k::kBlock;
using q4k::kColumns;
using q4k::kSubBlocks;

// ggml's block_q4_K: f16 d, f16 dmin, 12 bytes of packed 6-bit scales and mins, 128 bytes of quants.
constexpr size_t kQ4kBlockBytes = 144, kQ4kScales = 4, kQ4kQuants = 16;

// Sub-block j's 6-bit scale and min (ggml's get_scale_min_k4).
void scale_and_min(int j, const uint8_t *q, uint8_t &scale, uint8_t &min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Column n (0 .. 15) of block b's tile from that column's row of q4_K blocks.
void pack_column(const uint8_t *row, int64_t b, int64_t n, uint8_t *tile) {
    const uint8_t *block = row + b * kQ4kBlockBytes;
    uint8_t values[kBlock];
    const uint8_t *quants = block + kQ4kQuants;
    // ggml: 32 bytes per 64 values, low nibbles the first 32, high nibbles the next.
    for (int64_t quarter = 0; quarter < kBlock / 64; ++quarter)
        for (int64_t l = 0; l < 32; ++l) {
            values[64 * quarter + l] = quants[32 * quarter + l] & 0xF;
            values[64 * quarter + 32 + l] = quants[32 * quarter + l] >> 4;
        }
    for (int64_t c = 0; c < kBlock / 8; ++c)
        for (int64_t i = 0; i < 4; ++i)
            tile[q4k::kQuantsOffset + c * 64 + n * 4 + i] = uint8_t(values[8 * c + i] | values[8 * c + 4 + i] << 4);
    for (int j = 0; j < kSubBlocks; ++j) {
        uint8_t scale, min;
        scale_and_min(j, block + kQ4kScales, scale, min);
        tile[q4k::kScalesOffset + 16 * j + n] = scale;
        tile[q4k::kMinsOffset + 32 * (j / 2) + 2 * n + j % 2] = min;
    }
    std::memcpy(tile + q4k::kDOffset + 2 * n, block, 2);
    std::memcpy(tile + q4k::kDminOffset + 2 * n, block + 2, 2);
}

const int8_tiles::Kernels *isa_kernels(Int8Isa isa) {
#if defined(__x86_64__)
    return isa == Int8Isa::avx512_vnni ? &q4k::avx512_vnni_kernels() : &q4k::avx2_kernels();
#else
    (void)isa;
    return nullptr;
#endif
}

#if defined(__x86_64__)
constexpr auto quantize = q4k::quantize_row;
#else
constexpr void (*quantize)(const float *, int64_t, uint8_t *) = nullptr; // the products are x86 only
#endif

} // namespace

int64_t q4k::activation_row_bytes(int64_t k) { return k + k / kBlock * (4 + 2 * kSubBlocks); }

const TileFormat &q4k_format() {
    static const TileFormat format{
        {"q4k_avx2", "q4k_avx512_vnni"}, "q4k.quantize", "q4k.matmul", GGML_TYPE_Q4_K, kQ4kBlockBytes, q4k::kTileBytes,
        q4k::activation_row_bytes,       quantize,       pack_column,  isa_kernels};
    return format;
}

const TiledKernel &q4k_kernel(Int8Isa isa) {
    static const TiledKernel avx512_vnni(q4k_format(), Int8Isa::avx512_vnni), avx2(q4k_format(), Int8Isa::avx2);
    return isa == Int8Isa::avx512_vnni ? avx512_vnni : avx2;
}

} // namespace chatterbox::kernels
