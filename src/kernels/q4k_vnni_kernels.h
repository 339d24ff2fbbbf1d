#pragma once
// Internal to kernels/q4k_vnni: the packed layouts, and the two AVX-512 kernels (built alone in
// q4k_vnni_kernels.cpp with AVX-512 flags, called only where q4k_vnni_available()).

#include <cstddef>
#include <cstdint>

namespace chatterbox::kernels::q4k_vnni {

constexpr int64_t kBlock = 256;      // values per q4_K block (QK_K)
constexpr int64_t kSubBlocks = 8;    // of 32 values, each with its 6-bit scale and min
constexpr int64_t kColumns = 16;     // weight columns interleaved in a tile (one zmm of int32 lanes)
constexpr int64_t kRowsPerPass = 8;  // activation rows that share each unpacked weight register
constexpr int64_t kRowsPerUnit = 64; // rows of one work unit (a thread's share of a wide product)

// A tile: 16 columns × one 256-value block.
//   quants [32][16][4] u8: chunk c (values 8c .. 8c+7 of the block), column n, byte i holds value
//                          8c+i in its low nibble and 8c+4+i in its high nibble
//   scales [8][16]     u8: sub-block j, column n
//   mins   [4][16][2]  u8: sub-blocks 2p and 2p+1 of column n side by side (a pair per int32 lane)
//   d, dmin [16]      f16
constexpr int64_t kQuantsOffset = 0, kScalesOffset = 2048, kMinsOffset = 2176, kDOffset = 2304, kDminOffset = 2336,
                  kTileBytes = 2368;

// A quantised activation row of k values (k a multiple of 256): k int8, then one f32 scale per block,
// then the int16 sums of each 32-value sub-block. Defined in the portable q4k_vnni.cpp: an inline
// function here would also be compiled with AVX-512 in q4k_vnni_kernels.cpp, and the linker may keep
// that copy for every caller.
int64_t activation_row_bytes(int64_t k);

// One row of k f32 values into `out` (activation_row_bytes(k) bytes).
void quantize_row(const float *x, int64_t k, uint8_t *out);

// out[r][n] = Σ_k weight[n][k] · a[r][k] for rows [row_first, row_end) and column groups
// [group_first, group_end) of a weight packed as tiles (m columns, k values per column; group g's
// tiles at packed + g * (k / 256) * kTileBytes). Row r of out is at out + r * out_stride floats.
void multiply(const uint8_t *packed, int64_t k, int64_t m, int64_t group_first, int64_t group_end,
              const uint8_t *activations, int64_t row_first, int64_t row_end, float *out, int64_t out_stride);

} // namespace chatterbox::kernels::q4k_vnni
