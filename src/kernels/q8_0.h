#pragma once
// q8_0 weights in the engine's int8 tile kernels (kernels/int8_tiles.h), where ggml's own q8_0
// product would otherwise take them, on x86 CPUs with AVX2 or AVX-512 VNNI.
//
// Numbers: activations are quantised per row and 32 values as ggml's q8_0 (scale max|x|/127 rounded
// to f16, values rounded to nearest even); each 32-value block's integer sum takes d·d_a in f32, the
// blocks added in order. It equals ggml's own q8_0 product up to the order of its f32 sums.
//
// Two matmul kernels (kernels/matmul_kernel.h), "q8_0_avx512_vnni" and "q8_0_avx2", chosen by CPUID at
// run time; the packed layout is the same for both, and so are a row's bits.

#include "kernels/int8_tiles.h"

namespace chatterbox::kernels {

const TileFormat &q8_0_format();
const TiledKernel &q8_0_kernel(Int8Isa isa);

} // namespace chatterbox::kernels
