#pragma once
// The product of a layer's weight with activations: what nn::Linear and the non-depthwise
// convolutions multiply with. A weight that a matmul kernel packed at load (kernels/matmul_kernel.h)
// is multiplied by that kernel; any other by ggml_mul_mat (ggml's repacked layouts included).
//
//   ggml_tensor *y = nn::matmul(ctx, weight, x); // weight ggml [K, M], x ggml [K, ...] -> [M, ...]

#include "ggml.h"

namespace chatterbox::nn {

// weight: 2-D ggml [K, M]; x: f32 ggml [K, ...], rows contiguous, possibly overlapping (a view of
// windows one frame apart, as FrameConv1d's): a packed weight's kernel reads them in place.
ggml_tensor *matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x);

// ggml_mul_mat(a, b) accumulated in f32 on every backend. Every product of the engine goes through
// it: CUDA's cuBLAS route otherwise multiplies f16 and quantised operands in f16 arithmetic, whose
// sums overflow on the flow's activations (an f16 model's mel became NaN on an H200).
ggml_tensor *product(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b);

} // namespace chatterbox::nn
