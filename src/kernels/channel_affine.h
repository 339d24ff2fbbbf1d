#pragma once
// A per-channel affine map, optionally followed by ReLU, in one pass as one ggml custom op for the
// CPU backend: y[t, c, b] = max(0, x[t, c, b]·scale[c] + shift[c]) over the convolution layout ggml
// [T, C, B] (a folded BatchNorm1d and the ReLU after it). ggml computes it as mul, add and relu,
// three passes, its broadcast over the innermost dimension element by element (CAMPPlus's
// BatchNorms: 150 ms of a 10 s voice's 260 on the Zen 5 VM). The multiply and the add round
// separately, as ggml's do.

#include "ggml.h"

namespace chatterbox::kernels {

// x: f32 ggml [T, C, B] (made contiguous if it is not); scale, shift: contiguous f32 [C]. Returns
// a new f32 tensor of x's shape.
ggml_tensor *channel_affine(ggml_context *ctx, ggml_tensor *x, ggml_tensor *scale, ggml_tensor *shift, bool relu);

} // namespace chatterbox::kernels
