#include "modules/activations.h"

#include "core/error.h"
#include "kernels/vector_activations.h"

#include <cmath>

namespace chatterbox::nn {

ggml_tensor *relu(ggml_context *ctx, ggml_tensor *x) { return ggml_relu(ctx, x); }

ggml_tensor *leaky_relu(ggml_context *ctx, ggml_tensor *x, float negative_slope) {
    return ggml_leaky_relu(ctx, x, negative_slope, false);
}

ggml_tensor *elu(ggml_context *ctx, ggml_tensor *x) { return ggml_elu(ctx, x); }

ggml_tensor *silu(ggml_context *ctx, ggml_tensor *x) { return ggml_silu(ctx, x); }

ggml_tensor *sigmoid(ggml_context *ctx, ggml_tensor *x) { return ggml_sigmoid(ctx, x); }

ggml_tensor *tanh(ggml_context *ctx, ggml_tensor *x) { return ggml_tanh(ctx, x); }

ggml_tensor *gelu_erf(ggml_context *ctx, ggml_tensor *x) { return ggml_gelu_erf(ctx, x); }

ggml_tensor *gelu_tanh(ggml_context *ctx, ggml_tensor *x) {
    const float sqrt_2_over_pi = float(std::sqrt(2.0 / M_PI));
    // inner = sqrt(2/pi) * (x + 0.044715 x^3) = sqrt(2/pi) * x * (1 + 0.044715 x^2)
    ggml_tensor *x2 = ggml_sqr(ctx, x);
    ggml_tensor *poly = ggml_scale_bias(ctx, x2, 0.044715f * sqrt_2_over_pi, sqrt_2_over_pi);
    ggml_tensor *t = ggml_tanh(ctx, ggml_mul(ctx, x, poly));
    // 0.5 x (1 + t)
    return ggml_mul(ctx, ggml_scale(ctx, x, 0.5f), ggml_scale_bias(ctx, t, 1.0f, 1.0f));
}

ggml_tensor *mish(ggml_context *ctx, ggml_tensor *x) { return ggml_mul(ctx, x, ggml_tanh(ctx, ggml_softplus(ctx, x))); }

// The engine's vector kernel for the activation on a CPU backend, or nullptr where it has none.
ggml_tensor *cpu_kernel(ggml_context *ctx, ggml_tensor *x, Activation activation) {
    if (activation == Activation::gelu_erf) return kernels::gelu_erf(ctx, x);
    if (activation == Activation::gelu_tanh) return kernels::gelu_tanh(ctx, x);
    if (activation == Activation::mish) return kernels::mish(ctx, x);
    return nullptr;
}

ggml_tensor *activate(ggml_context *ctx, ggml_tensor *x, Activation activation, bool on_cpu) {
    if (ggml_tensor *y = on_cpu ? cpu_kernel(ctx, x, activation) : nullptr) return y;
    switch (activation) {
    case Activation::relu:
        return relu(ctx, x);
    case Activation::elu:
        return elu(ctx, x);
    case Activation::silu:
        return silu(ctx, x);
    case Activation::sigmoid:
        return sigmoid(ctx, x);
    case Activation::tanh:
        return tanh(ctx, x);
    case Activation::gelu_erf:
        return gelu_erf(ctx, x);
    case Activation::gelu_tanh:
        return gelu_tanh(ctx, x);
    case Activation::mish:
        return mish(ctx, x);
    }
    fail("unknown activation ", int(activation));
}

Activation activation_from_name(const std::string &name) {
    if (name == "relu") return Activation::relu;
    if (name == "elu") return Activation::elu;
    if (name == "silu" || name == "swish") return Activation::silu;
    if (name == "sigmoid") return Activation::sigmoid;
    if (name == "tanh") return Activation::tanh;
    if (name == "gelu") return Activation::gelu_erf;
    if (name == "gelu_new" || name == "gelu_tanh" || name == "gelu_pytorch_tanh") return Activation::gelu_tanh;
    if (name == "mish") return Activation::mish;
    fail("unknown activation '", name, "' (known: relu, elu, silu, swish, sigmoid, tanh, gelu, gelu_new, gelu_tanh, ",
         "gelu_pytorch_tanh, mish)");
}

} // namespace chatterbox::nn
