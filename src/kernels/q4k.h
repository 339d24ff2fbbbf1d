#pragma once
// Products of q4_K weights with f32 activations on x86 CPUs with AVX2 or AVX-512 VNNI, as ggml
// custom ops: the engine's replacement for ggml's repacked q4_K kernels there.
//
// Why: a batched T3 step multiplies every weight with 2 rows per request. ggml's repacked q4_K gemm
// (0.22) unpacks each weight block once per 4 rows with maddubs/madd, so 16 rows cost 3.6× two
// (bench/history/2026-12-03-t3-batching-intel.md), and that was 72 % of an 8-request step. Here a block
// of the weight (16 columns × 4 K with AVX-512, 8 columns × 4 K with AVX2) is unpacked once into one
// register and multiplied into up to 8 (AVX2: 4) rows, the rows' activations broadcast from memory:
// with `vpdpbusd` (64 multiply-adds per instruction), or with AVX2's `vpmaddubsw` pair sums added in
// 16 bits over a sub-block. The layout of the packed weights is the same for both.
//
// Numbers: activations are quantised per row to 8 bits per 256 values (scale max|x|/127, round to
// nearest even, like ggml's q8_K), the block sums are exact integers, and each output adds its 256-
// value blocks in order in f32. A row's result therefore depends on that row alone: the same bits
// in any batch, tile, column split or thread count (so a batched request gets the logits it gets
// alone). It equals ggml's own q4_K product up to that summation order.
//
// Two matmul kernels (kernels/matmul_kernel.h), "q4k_avx512_vnni" and "q4k_avx2", chosen by CPUID
// at run time; the packed layout is the same for both, and so are a row's bits.

#include "kernels/matmul_kernel.h"

#include "ggml.h"

namespace chatterbox::kernels {

// The instruction sets the kernels come in; on either a row's result is the same bits.
enum class Q4kIsa { avx2, avx512_vnni };
// Whether this build and CPU run the set (x86-64 with AVX2, FMA and F16C; AVX-512 F/BW/VL/DQ and VNNI).
bool q4k_runs(Q4kIsa isa);
const char *q4k_isa_name(Q4kIsa isa);
const MatmulKernel &q4k_kernel(Q4kIsa isa);

// Rows multiplied into each unpacked weight register, at most the set's own limit (AVX2 4, AVX-512
// VNNI 8); a row's result is the same bits for any. By default (KernelSelection::q4k_rows_per_pass
// 0) 4 on AMD CPUs, else the limit: the AVX-512 pass of 8 rows × 2 column groups keeps 32 sums, all
// the zmm registers, and spills some, which costs Zen 4 (512-bit operations in two halves) more than
// unpacking each chunk for 4 rows, while on the Intel VM 8 × 2 beat every other shape tried
// (bench/history/2026-12-04-zen4-kv-q8-huge-pages.md).
constexpr int kQ4kMaxRowsPerPass = 8;
// What the set takes when `asked` rows per pass are asked for (0: the default above).
int q4k_rows_per_pass(Q4kIsa isa, int asked);

// Whether a weight has the shape the kernels take: q4_K, 2-D, rows of whole 256-value blocks. The
// copy (16 columns interleaved per 256-value block, the 6-bit scales and mins unpacked) goes to the
// binder's huge-page arena (core/huge_pages.h); only it is read by the products.
bool q4k_packable(const ggml_tensor *weight);

} // namespace chatterbox::kernels
