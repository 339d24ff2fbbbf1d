#pragma once
// q4_K weights in the engine's int8 tile kernels (kernels/int8_tiles.h), the replacement for ggml's
// repacked q4_K kernels on x86 CPUs with AVX2 or AVX-512 VNNI.
//
// Numbers: activations are quantised per row to 8 bits per 256 values (scale max|x|/127, round to
// nearest even, like ggml's q8_K); a block's sums take its 6-bit sub-block scales and mins in
// integers, then d·d_a and dmin·d_a in f32. It equals ggml's own q4_K product up to the order of its
// f32 sums.
//
// Two matmul kernels (kernels/matmul_kernel.h), "q4k_avx512_vnni" and "q4k_avx2", chosen by CPUID
// at run time; the packed layout is the same for both, and so are a row's bits.

#include "kernels/int8_tiles.h"

namespace chatterbox::kernels {

const TileFormat &q4k_format();
const TiledKernel &q4k_kernel(Int8Isa isa);

} // namespace chatterbox::kernels
