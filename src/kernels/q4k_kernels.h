#pragma once
// Internal to kernels/q4k: the packed layout of q4_K weights, and the passes of each instruction set
// (each built alone with its flags: q4k_avx512_kernels.cpp for AVX-512 VNNI, q4k_avx2_kernels.cpp for
// AVX2; called only on a CPU that has it).

#include "kernels/int8_tiles_kernels.h"

namespace chatterbox::kernels::q4k {

using int8_tiles::kBlock;
using int8_tiles::kColumns;
using int8_tiles::Kernels;
using int8_tiles::kMaxRowsPerPass;
constexpr int64_t kSubBlocks = 8; // of 32 values, each with its 6-bit scale and min

// A tile: 16 columns × one 256-value block.
//   quants [32][16][4] u8: chunk c (values 8c .. 8c+7 of the block), column n, byte i holds value
//                          8c+i in its low nibble and 8c+4+i in its high nibble
//   scales [8][16]     u8: sub-block j, column n
//   mins   [4][16][2]  u8: sub-blocks 2p and 2p+1 of column n side by side (a pair per int32 lane)
//   d, dmin [16]      f16
constexpr int64_t kQuantsOffset = 0, kScalesOffset = 2048, kMinsOffset = 2176, kDOffset = 2304, kDminOffset = 2336,
                  kTileBytes = 2368;

// A quantised activation row of k values (k a multiple of 256): k int8, then one f32 scale per block,
// then the int16 sums of each 32-value sub-block. Defined in the portable q4k.cpp (see
// int8_tiles_kernels.h on inline functions).
int64_t activation_row_bytes(int64_t k);

// One row of k f32 values into `out` (activation_row_bytes(k) bytes), for the kernels of either set:
// it is built with AVX2 (int8_tiles_quantize_avx2.cpp), which every CPU with the AVX-512 set also has.
void quantize_row(const float *x, int64_t k, uint8_t *out);

const Kernels &avx512_vnni_kernels();
const Kernels &avx2_kernels();

} // namespace chatterbox::kernels::q4k
