#pragma once
// Internal to kernels/q8_0: the packed layout of q8_0 weights, their activations, and the passes of
// each instruction set (each built alone with its flags: q8_0_avx512_kernels.cpp for AVX-512 VNNI,
// q8_0_avx2_kernels.cpp for AVX2; called only on a CPU that has it).

#include "kernels/int8_tiles_kernels.h"

namespace chatterbox::kernels::q8_0 {

using int8_tiles::kBlock;
using int8_tiles::kColumns;
using int8_tiles::Kernels;
constexpr int64_t kSubBlock = 32;                  // values of one of ggml's q8_0 blocks, each with its f16 scale
constexpr int64_t kSubBlocks = kBlock / kSubBlock; // of a tile's block
constexpr int64_t kRowsPerPass = 4; // 2 column groups × 4 rows of f32 totals and int32 sums: 16 registers

// A tile: 16 columns × 256 values (eight q8_0 blocks of each column).
//   quants [64][16][4] u8: chunk c (values 4c .. 4c+3 of the block), column n, byte i: value 4c+i plus
//                          128 (vpdpbusd multiplies unsigned weights; AVX2 flips the bit back)
//   d      [8][16]    f16: sub-block j (values 32j .. 32j+31), column n
constexpr int64_t kQuantsOffset = 0, kDOffset = 4096, kTileBytes = 4352;

// A quantised activation row of k values (k a multiple of 256), as ggml quantises activations for its
// q8_0 products: k int8, then each 32-value sub-block's scale (max|x|/127 rounded to f16, kept as f32),
// then each sub-block's 128·Σq as int32 (what the weights' offset of 128 adds to a VNNI sum). Defined in
// the portable q8_0.cpp (see int8_tiles_kernels.h on inline functions).
int64_t activation_row_bytes(int64_t k);

// One row of k f32 values into `out` (activation_row_bytes(k) bytes), for the kernels of either set:
// it is built with AVX2 (int8_tiles_quantize_avx2.cpp), which every CPU with the AVX-512 set also has.
void quantize_row(const float *x, int64_t k, uint8_t *out);

const Kernels &avx512_vnni_kernels();
const Kernels &avx2_kernels();

} // namespace chatterbox::kernels::q8_0
