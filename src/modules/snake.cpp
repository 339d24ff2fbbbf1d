#include "modules/snake.h"

#include "core/error.h"
#include "kernels/vector_activations.h"

namespace chatterbox::nn {

Snake::Snake(ModuleWeights &w, const std::string &prefix, int64_t channels_) : channels(channels_), on_cpu(w.on_cpu()) {
    if (channels <= 0) fail("Snake ", prefix, ": bad channel count ", channels);
    const std::string name = prefix + ".alpha";
    alpha = w.get(name, {channels}, WeightUse::f32);
    std::vector<float> inv = w.host_f32(name, {channels});
    for (float &a : inv) a = float(1.0 / (double(a) + 1e-9));
    inv_alpha = w.derived(name + ".reciprocal", {channels}, std::move(inv));
}

ggml_tensor *Snake::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (!alpha) fail("Snake used before it was bound");
    if (x->ne[1] != channels)
        fail("Snake ", ggml_get_name(alpha), ": input has ", x->ne[1], " channels (ggml ne[1]), expected ", channels);
    if (ggml_tensor *y = on_cpu ? kernels::snake(ctx, x, alpha, inv_alpha) : nullptr) return y;
    ggml_tensor *a = ggml_reshape_2d(ctx, alpha, 1, channels);
    ggml_tensor *inv = ggml_reshape_2d(ctx, inv_alpha, 1, channels);
    ggml_tensor *s = ggml_sin(ctx, ggml_mul(ctx, x, a));
    return ggml_add(ctx, x, ggml_mul(ctx, ggml_sqr(ctx, s), inv));
}

} // namespace chatterbox::nn
