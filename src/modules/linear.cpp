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
    if (activation == Activation::gelu_erf)
        if (ggml_tensor *y = fused_matmul(ctx, weight, x, {bias, kernels::Epilogue::Activation::gelu_erf})) return y;
    return activate(ctx, (*this)(ctx, x), activation, on_cpu);
}

} // namespace chatterbox::nn
