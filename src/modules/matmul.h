#pragma once
// The product of a layer's weight with activations: what nn::Linear and the non-depthwise
// convolutions multiply with. A weight that a matmul kernel packed at load (kernels/matmul_kernel.h)
// is multiplied by that kernel; any other by ggml_mul_mat (ggml's repacked layouts included).
//
//   ggml_tensor *y = nn::matmul(ctx, weight, x); // weight ggml [K, M], x ggml [K, ...] -> [M, ...]

#include "kernels/matmul_kernel.h"

#include "ggml.h"

namespace chatterbox::nn {

// weight: 2-D ggml [K, M]; x: f32 ggml [K, ...], rows contiguous, possibly overlapping (a view of
// windows one frame apart, as FrameConv1d's): a packed weight's kernel reads them in place.
ggml_tensor *matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x);
// weight·x + bias (f32 [M], or nullptr): the bias added by the product's kernel as it writes the
// result where it can (kernels::Epilogue), else by ggml_add.
ggml_tensor *matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x, ggml_tensor *bias);
// The product with `epilogue` in one node where the weight's kernel applies it; else nullptr.
ggml_tensor *fused_matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x, const kernels::Epilogue &epilogue);

// ggml_mul_mat(a, b) accumulated in f32 on every backend. Every product of the engine goes through
// it: CUDA's cuBLAS route otherwise multiplies f16 and quantised operands in f16 arithmetic, whose
// sums overflow on the flow's activations (an f16 model's mel became NaN on an H200).
ggml_tensor *product(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b);

} // namespace chatterbox::nn
