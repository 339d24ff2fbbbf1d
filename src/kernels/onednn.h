#pragma once
// CPU kernels from oneDNN run as ggml custom ops inside ggml graphs (the matmul route
// MatmulRoute::onednn and nn::AttentionPath::blocked). Each op splits its work between ggml's
// threads; every thread calls oneDNN single-threaded (omp_set_num_threads(1): oneDNN's own OpenMP
// team inside ggml's would oversubscribe the cores), with its own scratchpad, and the primitives
// are created once per shape and cached for the life of the process. Load-time weights are reordered
// once into the layout oneDNN's matmul prefers (OnednnWeights).
//
// Builds without oneDNN (CHATTERBOX_TSAN, or libdnnl-dev missing) link onednn_unavailable.cpp
// instead: onednn_available() is false and the other functions throw.
//
// Measured on an AMD EPYC (Zen 3, AVX2; bench/README.md): oneDNN's f32 sgemm is 1.1–1.8× ggml's
// tinyBLAS on the flow's shapes. On a CPU with AMX the same ops could run in bf16 (weights
// reordered once, activation slices converted); that is not implemented, nothing here was
// measured on such a CPU.

#include "ggml-backend.h"
#include "ggml.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace chatterbox::kernels {

bool onednn_available();

// Copies of f32 weights in the layout oneDNN's matmul prefers for them (memory::format_tag::any;
// on AVX2 with gemm:jit that is `ab`, K × M row-major, where ggml's is `ba`), made once per weight
// on its first onednn_matmul node and kept, so that every call reads the preferred layout and no
// call has to convert ggml's. The owner of the weights holds one for its buffers (ModuleWeights,
// when its backend takes the onednn route); it must outlive every graph built on them, and graphs
// of concurrent sessions may share it. Costs a second copy of the f32 matmul weights.
class OnednnWeights {
  public:
    // buffers: host buffers of weights whose values no longer change.
    explicit OnednnWeights(std::vector<ggml_backend_buffer_t> buffers);
    ~OnednnWeights();
    OnednnWeights(const OnednnWeights &) = delete;
    OnednnWeights &operator=(const OnednnWeights &) = delete;

    struct State;

  private:
    std::unique_ptr<State> state_;
};

// The product of an f32 weight ggml [K, M] (in host memory) and f32 activations ggml [K, N...]
// -> ggml [M, N...], like ggml_mul_mat(weight, x). Each ggml thread multiplies a contiguous slice
// of the N columns. A weight (or a view of one) in the buffers of an OnednnWeights is read from its
// reordered copy; any other (e.g. a graph input) in place in ggml's layout.
ggml_tensor *onednn_matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x);

// Softmax attention without a mask: q f32 ggml [D, H, n_q, B], k and v f32 ggml [D, H_kv, n_kv, B]
// (H a multiple of H_kv; rows contiguous, other strides free, e.g. views of a fused projection)
// -> ggml [D*H, n_q, B]. Queries go in blocks: S = scale·Q·Kᵀ for the block (oneDNN f32), an
// exponentiation pass in place, P·V (oneDNN f32) and 1/Σ applied to the output rows; no n_q × n_kv
// tensor is ever stored and nothing is rescaled per key block (unlike flash attention).
ggml_tensor *blocked_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v, float scale);

// The FLOPs (2 per multiply-add) of a node made by onednn_matmul, recognised by the name it gives
// its nodes; 0 for any other node. For FLOP counts over a graph.
double onednn_matmul_flops(const ggml_tensor *node);

} // namespace chatterbox::kernels
