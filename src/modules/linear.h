#pragma once
// Fully connected layer, PyTorch nn.Linear: y = x W^T + b.
//
//   nn::Linear q_proj(w, "tfmr.layers.0.self_attn.q_proj", 1024, 1024, /*bias=*/false);
//   ggml_tensor *q = q_proj(ctx, x); // x: ggml [in, T, B] = PyTorch (B, T, in) -> ggml [out, T, B]
//   ggml_tensor *h = up.then(ctx, x, nn::Activation::gelu_erf, on_cpu); // GELU(up(x))
//   x = o_proj.added_to(ctx, mixed, x);                                  // x + o_proj(mixed)
//
// The weight keeps its stored type (f32, f16, q8_0 ...): ggml multiplies quantised weights
// directly, and on the CPU a quantised weight may be stored in a faster layout
// (WeightUse::matmul), so `weight` is for matrix products only (nn::matmul, on the route the
// weights were bound for). The bias is uploaded as f32.

#include "modules/activations.h"
#include "modules/module_weights.h"

#include "ggml.h"

#include <string>

namespace chatterbox::nn {

struct Linear {
    ggml_tensor *weight = nullptr; // ggml [in, out] = PyTorch (out, in)
    ggml_tensor *bias = nullptr;   // ggml [out], or nullptr
    int64_t in = 0;
    int64_t out = 0;

    Linear() = default;
    // Binds `<prefix>.weight` (out, in) and, when bias is true, `<prefix>.bias` (out).
    Linear(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, bool bias = true);

    // x: ggml [in, ...] (any number of outer dimensions) -> ggml [out, ...]. The bias is added by the
    // product's kernel as it writes where it can (nn::matmul).
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
    // activation(this(x)): in the product's node where its kernel applies the activation (GELU (erf)
    // on oneDNN's), else nn::activate (on_cpu: the graph runs on a CPU backend).
    ggml_tensor *then(ggml_context *ctx, ggml_tensor *x, Activation activation, bool on_cpu) const;
    // residual + this(x) (residual of the result's shape), in the product's node where its kernel
    // adds it (the q4_K kernels'), else by ggml_add: the same bits either way.
    ggml_tensor *added_to(ggml_context *ctx, ggml_tensor *x, ggml_tensor *residual) const;

  private:
    void check_input(const ggml_tensor *x) const;
};

} // namespace chatterbox::nn
