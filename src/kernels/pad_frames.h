#pragma once
// Zero frames before and after a frame-major sequence, as one ggml custom op for the CPU backend:
// ggml [C, T, B] -> ggml [C, left + T + right, B], each frame (a row of C values) copied whole and
// each padding frame zeroed whole. ggml_pad_ext computes every element apart, with its bounds checks
// (FrameConv1d's causal padding in the flow's estimator: 0.7 ms a call, 290 calls a CFM, on the Zen 5
// VM; bench/history/2026-12-07-zen5-flow-norms-and-convolutions.md).

#include "ggml.h"

namespace chatterbox::kernels {

// x: f32 ggml [C, T, B] with contiguous rows (made so if they are not). Returns a new f32 tensor.
ggml_tensor *pad_frames(ggml_context *ctx, ggml_tensor *x, int left, int right);

} // namespace chatterbox::kernels
