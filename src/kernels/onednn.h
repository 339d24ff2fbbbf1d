#pragma once
// CPU kernels from oneDNN run as ggml custom ops inside ggml graphs (the matmul kernel onednn_f32
// and nn::AttentionPath::blocked). Each op splits its work between ggml's
// threads; every thread calls oneDNN single-threaded (omp_set_num_threads(1): oneDNN's own OpenMP
// team inside ggml's would oversubscribe the cores), with its own scratchpad, and the primitives
// are created once per shape and cached for the life of the process.
//
// Builds without oneDNN (CHATTERBOX_TSAN, or libdnnl-dev missing) link onednn_unavailable.cpp
// instead: onednn_available() is false, onednn_f32 does not run, and the other functions throw.
//
// Measured on an AMD EPYC (Zen 3, AVX2; bench/history/2026-12-01-flow-kernels-zen3.md): oneDNN's f32
// sgemm is 1.1–1.8× ggml's tinyBLAS on the flow's shapes. On a Zen 5 (AVX-512 BF16), with its bf16
// products, English's CFM runs at 56 % of the machine's bf16 peak (bench/README.md, "AMD EPYC Zen 5
// VM"); by a per-node profile its weight products run at 60–78 % of that peak and its attention at
// ~43 %, a third of the attention's time in the softmax's exponentiation.

#include "kernels/matmul_kernel.h"

#include "ggml.h"

namespace chatterbox::kernels {

bool onednn_available();

// The matmul kernel "onednn_f32" (kernels/matmul_kernel.h; off unless enabled): f32 weights copied
// at load into the layout oneDNN's matmul prefers for them (memory::format_tag::any; on AVX2 with
// gemm:jit that is `ab`, K × M row-major, where ggml's is `ba`), so that no call converts ggml's.
// Costs a second copy of the f32 matmul weights.
const MatmulKernel &onednn_f32_kernel();

// The matmul kernel "onednn_bf16" (kernels/matmul_kernel.h; ProductPrecision::bf16, on by default
// where the CPU has AVX-512 BF16): any float weight widened and rounded to bf16 at load, into the
// layout oneDNN's bf16 matmul prefers; each thread rounds its slice of the activations to bf16 and
// oneDNN sums in f32. A row's result does not depend on how the rows are sliced (checked in
// tests/unit/test_onednn_routes.cpp).
const MatmulKernel &onednn_bf16_kernel();

// The product of an f32 weight ggml [K, M] (in host memory) and f32 activations ggml [K, N...]
// -> ggml [M, N...], like ggml_mul_mat(weight, x), the weight read in place in ggml's layout (e.g. a
// graph input). Each ggml thread multiplies a contiguous slice of the N columns.
ggml_tensor *onednn_matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x);

// Softmax attention without a mask: q f32 ggml [D, H, n_q, B], k and v f32 ggml [D, H_kv, n_kv, B]
// (H a multiple of H_kv; rows contiguous, other strides free, e.g. views of a fused projection)
// -> ggml [D*H, n_q, B]. Queries go in blocks: S = scale·Q·Kᵀ for the block (oneDNN), an
// exponentiation pass in place, P·V (oneDNN) and 1/Σ applied to the output rows; no n_q × n_kv
// tensor is ever stored and nothing is rescaled per key block (unlike flash attention).
// precision bf16 (only where onednn_bf16 runs): Q, K, V and P are rounded to bf16 for the products,
// which sum in f32; the exponentiation and the sums stay f32. Where the CPU has AVX-512 BF16 and the
// heads are at most 64 wide, the products are kernels/bf16_attention.h's instead of oneDNN's.
//
// relative (optional): the relative-position term of Transformer-XL / ESPnet attention
// (nn::RelPositionAttention), added to each score before the softmax: score(i, j) += q'_i · p_(n−1−i+j)
// with `queries` q' f32 ggml [D, H, n, B] and `table` p f32 ggml [D, H, 2n−1, 1] (row r for offset
// n−1−r, shared by the batch rows), n = n_q = n_kv; f32 precision only. Per query block it is one
// more product, of the block's q' with the 2n−1 table's window of block + n − 1 rows; the
// n_q × (2n−1) tensor of every offset is never stored either.
struct RelativePositions {
    ggml_tensor *queries = nullptr;
    ggml_tensor *table = nullptr;
};
ggml_tensor *blocked_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v, float scale,
                               ProductPrecision precision = ProductPrecision::f32,
                               const RelativePositions &relative = {});

// The FLOPs of a node made by blocked_attention (2·D·n_q·n_kv·H·B for the scores, as much for P·V
// and, with relative positions, for their term); 0 for any other node.
double blocked_attention_flops(const ggml_tensor *node);

// The FLOPs (2 per multiply-add) of a node made by onednn_matmul, recognised by the name it gives
// its nodes; 0 for any other node. For FLOP counts over a graph.
double onednn_matmul_flops(const ggml_tensor *node);

} // namespace chatterbox::kernels
