#pragma once
// Normalisation layers with PyTorch semantics.
//
//   nn::LayerNorm ln(w, "flow.encoder.after_norm", 512, 1e-5f);
//   x = ln(ctx, x);                       // x: ggml [512, T, B] = PyTorch (B, T, 512)
//   x = ln.over_channels(ctx, x);         // x: ggml [T, 512, B] = PyTorch (B, 512, T), normalised per frame
//   x = ln.then_mish(ctx, x);             // Mish(ln(x)), one pass on a CPU
//   nn::RMSNorm norm(w, "tfmr.norm", 1024, 1e-5f);
//   nn::BatchNorm1d bn(w, "xvector.tdnn.nonlinear.batchnorm", 128);  // folded to scale/shift at load
//   x = bn(ctx, x);                       // x: ggml [T, 128, B];  bn.features(ctx, e) for e: ggml [128, B]
//   nn::GroupNorm gn(w, "block.1", 8, 256);                          // x: ggml [T, 256, B]

#include "modules/module_weights.h"

#include "ggml.h"

#include <string>

namespace chatterbox::nn {

// Normalises over the innermost dimension (nn.LayerNorm(dim), biased variance). On a CPU backend
// the norm, its affine map and an activation after it are one node (kernels/layer_norm.h).
struct LayerNorm {
    ggml_tensor *weight = nullptr; // ggml [dim], nullptr without affine
    ggml_tensor *bias = nullptr;
    int64_t dim = 0;
    float eps = 1e-5f;
    bool on_cpu = false;

    LayerNorm() = default;
    // affine: binds `<prefix>.weight` and `<prefix>.bias` (dim).
    LayerNorm(ModuleWeights &w, const std::string &prefix, int64_t dim, float eps, bool affine = true);

    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;    // x: ggml [dim, ...]
    ggml_tensor *then_mish(ggml_context *ctx, ggml_tensor *x) const;     // Mish(this(x)), x: ggml [dim, ...]
    ggml_tensor *over_channels(ggml_context *ctx, ggml_tensor *x) const; // x: ggml [T, dim, B]

  private:
    void check_input(const ggml_tensor *x) const;
};

// x / sqrt(mean(x^2) + eps) * weight over the innermost dimension (Llama RMSNorm).
struct RMSNorm {
    ggml_tensor *weight = nullptr; // ggml [dim]
    int64_t dim = 0;
    float eps = 1e-6f;

    RMSNorm() = default;
    RMSNorm(ModuleWeights &w, const std::string &prefix, int64_t dim, float eps);

    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const; // x: ggml [dim, ...]
};

// nn.GroupNorm(groups, channels) on conv-layout input: statistics per (batch, group) over the
// group's channels and all frames.
struct GroupNorm {
    ggml_tensor *weight = nullptr; // ggml [C], nullptr without affine
    ggml_tensor *bias = nullptr;
    int groups = 0;
    int64_t channels = 0;
    float eps = 1e-5f;

    GroupNorm() = default;
    GroupNorm(ModuleWeights &w, const std::string &prefix, int groups, int64_t channels, float eps = 1e-5f,
              bool affine = true);

    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const; // x: ggml [T, C, B]
};

// nn.BatchNorm1d in inference mode, folded at load: y = x * scale + shift with
// scale = weight / sqrt(running_var + eps), shift = bias - running_mean * scale; on a CPU one pass
// (kernels/channel_affine.h), with the ReLU that so often follows it if asked.
// `num_batches_tracked` is present in checkpoints and ignored.
struct BatchNorm1d {
    ggml_tensor *scale = nullptr; // ggml [C]
    ggml_tensor *shift = nullptr; // ggml [C]
    int64_t channels = 0;
    bool on_cpu = false;

    BatchNorm1d() = default;
    // affine false: no `<prefix>.weight` / `.bias` (weight 1, bias 0).
    BatchNorm1d(ModuleWeights &w, const std::string &prefix, int64_t channels, float eps = 1e-5f, bool affine = true);

    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const; // x: ggml [T, C, B] = PyTorch (B, C, T)
    ggml_tensor *relu(ggml_context *ctx, ggml_tensor *x) const;       // relu(bn(x)), x as above
    ggml_tensor *features(ggml_context *ctx, ggml_tensor *x) const;   // x: ggml [C, B]    = PyTorch (B, C)
};

} // namespace chatterbox::nn
