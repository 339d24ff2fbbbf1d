#include "modules/linear.h"

#include "core/error.h"
#include "modules/matmul.h"

namespace chatterbox::nn {

Linear::Linear(ModuleWeights &w, const std::string &prefix, int64_t in_, int64_t out_, bool has_bias)
    : in(in_), out(out_) {
    if (in <= 0 || out <= 0) fail("Linear ", prefix, ": bad size ", in, " -> ", out);
    weight = w.get(prefix + ".weight", {out, in}, WeightUse::matmul);
    if (has_bias) bias = w.get(prefix + ".bias", {out}, WeightUse::f32);
}

void Linear::check_input(const ggml_tensor *x) const {
    if (!weight) fail("Linear used before it was bound");
    if (x->ne[0] != in) fail("Linear ", ggml_get_name(weight), ": input has ", x->ne[0], " features, expected ", in);
}

ggml_tensor *Linear::operator()(ggml_context *ctx, ggml_tensor *x) const {
    check_input(x);
    return matmul(ctx, weight, x, bias);
}

ggml_tensor *Linear::then(ggml_context *ctx, ggml_tensor *x, Activation activation, bool on_cpu) const {
    check_input(x);
    using Fused = kernels::Epilogue::Activation;
    const Fused fused = activation == Activation::gelu_erf    ? Fused::gelu_erf
                        : activation == Activation::gelu_tanh ? Fused::gelu_tanh
                                                              : Fused::none;
    if (fused != Fused::none)
        if (ggml_tensor *y = fused_matmul(ctx, weight, x, {bias, fused})) return y;
    return activate(ctx, (*this)(ctx, x), activation, on_cpu);
}

ggml_tensor *Linear::added_to(ggml_context *ctx, ggml_tensor *x, ggml_tensor *residual) const {
    check_input(x);
    if (ggml_tensor *y = fused_matmul(ctx, weight, x, {bias, kernels::Epilogue::Activation::none, residual})) return y;
    return ggml_add(ctx, residual, (*this)(ctx, x));
}

} // namespace chatterbox::nn
