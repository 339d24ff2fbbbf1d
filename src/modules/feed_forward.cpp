#include "modules/feed_forward.h"

#include "core/error.h"

namespace chatterbox::nn {

FeedForward::FeedForward(Linear up_, Linear down_, Activation activation_, bool on_cpu_)
    : up(up_), down(down_), activation(activation_), on_cpu(on_cpu_) {
    if (down.in != up.out) fail("FeedForward: up projection gives ", up.out, " features, down expects ", down.in);
}

ggml_tensor *FeedForward::operator()(ggml_context *ctx, ggml_tensor *x) const {
    return down(ctx, up.then(ctx, x, activation, on_cpu));
}

ggml_tensor *FeedForward::added_to(ggml_context *ctx, ggml_tensor *x, ggml_tensor *residual) const {
    return down.added_to(ctx, up.then(ctx, x, activation, on_cpu), residual);
}

GatedFeedForward::GatedFeedForward(Linear gate_, Linear up_, Linear down_, Activation activation_)
    : gate(gate_), up(up_), down(down_), activation(activation_) {
    if (gate.in != up.in || gate.out != up.out || down.in != up.out)
        fail("GatedFeedForward: gate ", gate.in, "->", gate.out, ", up ", up.in, "->", up.out, " and down ", down.in,
             "->", down.out, " do not fit together");
}

ggml_tensor *GatedFeedForward::hidden(ggml_context *ctx, ggml_tensor *x) const {
    ggml_tensor *gated = gate(ctx, x);
    ggml_tensor *linear = up(ctx, x);
    // SwiGLU is one fused ggml op (no separate activation tensor).
    return activation == Activation::silu ? ggml_swiglu_split(ctx, gated, linear)
                                          : ggml_mul(ctx, activate(ctx, gated, activation), linear);
}

ggml_tensor *GatedFeedForward::operator()(ggml_context *ctx, ggml_tensor *x) const { return down(ctx, hidden(ctx, x)); }

ggml_tensor *GatedFeedForward::added_to(ggml_context *ctx, ggml_tensor *x, ggml_tensor *residual) const {
    return down.added_to(ctx, hidden(ctx, x), residual);
}

} // namespace chatterbox::nn
