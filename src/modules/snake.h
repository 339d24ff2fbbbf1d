#pragma once
// Snake activation with a per-channel alpha (BigVGAN / HiFT, alpha_logscale off):
//   y = x + 1/(alpha + 1e-9) * sin^2(alpha * x)
//
//   nn::Snake act(w, "mel2wav.resblocks.0.activations1.0", 256);   // binds `<prefix>.alpha` (256)
//   x = act(ctx, x);                                                // x: ggml [T, 256, B] = PyTorch (B, 256, T)

#include "modules/module_weights.h"

#include "ggml.h"

#include <string>

namespace chatterbox::nn {

struct Snake {
    ggml_tensor *alpha = nullptr;     // ggml [C]
    ggml_tensor *inv_alpha = nullptr; // ggml [C]: 1 / (alpha + 1e-9), folded at load
    int64_t channels = 0;
    bool on_cpu = false; // the engine's one-pass vector kernel (kernels/vector_activations.h)

    Snake() = default;
    Snake(ModuleWeights &w, const std::string &prefix, int64_t channels);

    // x: ggml [T, C, B] (conv layout) -> same shape.
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
};

} // namespace chatterbox::nn
