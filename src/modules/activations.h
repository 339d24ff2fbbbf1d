#pragma once
// Element-wise activations with PyTorch semantics, on ggml tensors of any layout.
//
//   x = nn::silu(ctx, x);
//   x = nn::leaky_relu(ctx, x, 0.1f);
//   x = nn::activate(ctx, x, nn::Activation::gelu_erf);   // when the choice is data (FeedForward)
//
// Per-channel activations with weights (Snake) live in snake.h.

#include "ggml.h"

#include <string>

namespace chatterbox::nn {

ggml_tensor *relu(ggml_context *ctx, ggml_tensor *x);
ggml_tensor *leaky_relu(ggml_context *ctx, ggml_tensor *x, float negative_slope); // PyTorch default slope 0.01
ggml_tensor *elu(ggml_context *ctx, ggml_tensor *x);                              // alpha = 1
ggml_tensor *silu(ggml_context *ctx, ggml_tensor *x);
ggml_tensor *sigmoid(ggml_context *ctx, ggml_tensor *x);
ggml_tensor *tanh(ggml_context *ctx, ggml_tensor *x);
// GELU, exact: 0.5 x (1 + erf(x / sqrt 2)) (nn.GELU(), F.gelu).
ggml_tensor *gelu_erf(ggml_context *ctx, ggml_tensor *x);
// GELU, tanh approximation (nn.GELU(approximate="tanh"), GPT-2's gelu_new), built from exact ops:
// ggml's own gelu reads an f16 table on the CPU.
ggml_tensor *gelu_tanh(ggml_context *ctx, ggml_tensor *x);
// Mish: x tanh(softplus(x)), softplus with PyTorch's threshold 20.
ggml_tensor *mish(ggml_context *ctx, ggml_tensor *x);

enum class Activation { relu, elu, silu, sigmoid, tanh, gelu_erf, gelu_tanh, mish };
// on_cpu: the graph runs on a CPU backend, where GELU (erf) and Mish take the engine's vector
// kernels (kernels/vector_activations.h) in builds that have them, in place of ggml's scalar ops.
ggml_tensor *activate(ggml_context *ctx, ggml_tensor *x, Activation activation, bool on_cpu = false);
// "relu", "silu", "gelu" (exact), "gelu_new"/"gelu_tanh", "mish", ... as model configs spell them.
Activation activation_from_name(const std::string &name);

} // namespace chatterbox::nn
