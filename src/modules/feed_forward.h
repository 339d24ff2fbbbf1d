#pragma once
// Position-wise feed-forward blocks on sequences ggml [C, T, B] = PyTorch (B, T, C).
//
//   nn::FeedForward ff(nn::Linear(w, "ff.net.0.proj", 256, 1024), nn::Linear(w, "ff.net.2", 1024, 256),
//                      nn::Activation::gelu_erf);
//   nn::GatedFeedForward mlp(nn::Linear(w, "mlp.gate_proj", 1024, 4096, false),
//                            nn::Linear(w, "mlp.up_proj", 1024, 4096, false),
//                            nn::Linear(w, "mlp.down_proj", 4096, 1024, false));   // Llama SwiGLU
//   x = ff(ctx, x);

#include "modules/activations.h"
#include "modules/linear.h"

namespace chatterbox::nn {

// down(act(up(x))); on_cpu as nn::activate's (the weights' backend is a CPU: ModuleWeights::on_cpu).
struct FeedForward {
    Linear up, down;
    Activation activation = Activation::relu;
    bool on_cpu = false;

    FeedForward() = default;
    FeedForward(Linear up, Linear down, Activation activation, bool on_cpu = false);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
    // residual + this(x): a pre-norm block's residual connection, in the down projection's node where
    // its kernel adds it (Linear::added_to).
    ggml_tensor *added_to(ggml_context *ctx, ggml_tensor *x, ggml_tensor *residual) const;
};

// down(act(gate(x)) * up(x)), SiLU by default (SwiGLU).
struct GatedFeedForward {
    Linear gate, up, down;
    Activation activation = Activation::silu;

    GatedFeedForward() = default;
    GatedFeedForward(Linear gate, Linear up, Linear down, Activation activation = Activation::silu);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
    ggml_tensor *added_to(ggml_context *ctx, ggml_tensor *x, ggml_tensor *residual) const; // as FeedForward's

  private:
    ggml_tensor *hidden(ggml_context *ctx, ggml_tensor *x) const; // act(gate(x)) * up(x)
};

} // namespace chatterbox::nn
