#pragma once
// The product of a layer's weight with activations, on the route its weights were bound for
// (BackendOptions::matmul_route): what nn::Linear and the non-depthwise convolutions multiply with.
//
//   ggml_tensor *y = nn::matmul(ctx, weight, x, route); // weight ggml [K, M], x ggml [K, ...] -> [M, ...]
//
// Only f32 weights take the oneDNN route. A q4_K weight that its owner packed for the engine's q4_K
// kernels (kernels/q4k.h) is multiplied by them, whatever the route; other types use ggml_mul_mat.

#include "core/backend.h"

#include "ggml.h"

namespace chatterbox::nn {

// weight: 2-D ggml [K, M] (reshape a conv kernel first); x: f32 ggml [K, ...].
ggml_tensor *matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x, MatmulRoute route);

// ggml_mul_mat(a, b) accumulated in f32 on every backend. Every product of the engine goes through
// it: CUDA's cuBLAS route otherwise multiplies f16 and quantised operands in f16 arithmetic, whose
// sums overflow on the flow's activations (an f16 model's mel became NaN on an H200).
ggml_tensor *product(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b);

} // namespace chatterbox::nn
