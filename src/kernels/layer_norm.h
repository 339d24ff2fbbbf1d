#pragma once
// LayerNorm over the innermost dimension (PyTorch nn.LayerNorm: biased variance), its affine map,
// and optionally Mish after it, in one pass over each row as one ggml custom op for the CPU backend.
// ggml computes it as norm, mul and add (and Mish as a fourth node): a pass over the tensor each,
// its norm summing every row in scalar double arithmetic. In the flow's estimator (141 LayerNorms a
// CFM step, 56 of them followed by Mish) that was ~1.4 s of English's 12.4 s CFM on the Zen 5 VM
// (bench/history/2026-12-07-zen5-flow-norms-and-convolutions.md).
//
// Each row is computed by the same code whatever its place, the batch or the thread count (the
// threads split the rows), so a batched request gets the bits it gets alone. The sums are f32, in 16
// partial sums (then added in a fixed order), the mean first and then the squared deviations from it.

#include "ggml.h"

namespace chatterbox::kernels {

enum class AfterNorm {
    none,
    mish, // x·tanh(softplus(x)), softplus with PyTorch's threshold 20; |error| < 1e-6·max(1, |x|)
};

// x: f32 ggml [dim, ...] with contiguous rows (made so if they are not); weight, bias: contiguous
// f32 [dim], both or neither. Returns a new f32 tensor of x's shape.
ggml_tensor *layer_norm(ggml_context *ctx, ggml_tensor *x, ggml_tensor *weight, ggml_tensor *bias, float eps,
                        AfterNorm after = AfterNorm::none);

// Mish of one value as layer_norm computes it, for tests.
float mish_value(float x);

} // namespace chatterbox::kernels
