#include "modules/norm.h"

#include "core/error.h"
#include "kernels/channel_affine.h"
#include "kernels/layer_norm.h"
#include "modules/activations.h"

#include <cmath>

namespace chatterbox::nn {

namespace {

void check_dim(const char *what, const ggml_tensor *named, int axis, const ggml_tensor *x, int64_t expected) {
    if (x->ne[axis] != expected)
        fail(what, " ", ggml_get_name(named), ": input has ", x->ne[axis], " values in ggml dimension ", axis,
             ", expected ", expected);
}

// Per-channel affine on conv layout ggml [T, C, B].
ggml_tensor *channel_affine(ggml_context *ctx, ggml_tensor *x, ggml_tensor *scale, ggml_tensor *shift) {
    const int64_t c = x->ne[1];
    if (scale) x = ggml_mul(ctx, x, ggml_reshape_2d(ctx, scale, 1, c));
    if (shift) x = ggml_add(ctx, x, ggml_reshape_2d(ctx, shift, 1, c));
    return x;
}

} // namespace

LayerNorm::LayerNorm(ModuleWeights &w, const std::string &prefix, int64_t dim_, float eps_, bool affine)
    : dim(dim_), eps(eps_), on_cpu(w.on_cpu()) {
    if (dim <= 0) fail("LayerNorm ", prefix, ": bad size ", dim);
    if (affine) {
        weight = w.get(prefix + ".weight", {dim}, WeightUse::f32);
        bias = w.get(prefix + ".bias", {dim}, WeightUse::f32);
    }
}

void LayerNorm::check_input(const ggml_tensor *x) const {
    if (dim == 0) fail("LayerNorm used before it was bound");
    if (x->ne[0] != dim) fail("LayerNorm: input has ", x->ne[0], " features, expected ", dim);
}

ggml_tensor *LayerNorm::operator()(ggml_context *ctx, ggml_tensor *x) const {
    check_input(x);
    if (on_cpu) return kernels::layer_norm(ctx, x, weight, bias, eps);
    x = ggml_norm(ctx, x, eps);
    if (weight) x = ggml_add(ctx, ggml_mul(ctx, x, weight), bias);
    return x;
}

ggml_tensor *LayerNorm::then_mish(ggml_context *ctx, ggml_tensor *x) const {
    check_input(x);
    if (on_cpu) return kernels::layer_norm(ctx, x, weight, bias, eps, kernels::AfterNorm::mish);
    return mish(ctx, (*this)(ctx, x));
}

ggml_tensor *LayerNorm::over_channels(ggml_context *ctx, ggml_tensor *x) const {
    ggml_tensor *y = (*this)(ctx, ggml_cont(ctx, ggml_transpose(ctx, x)));
    return ggml_cont(ctx, ggml_transpose(ctx, y));
}

RMSNorm::RMSNorm(ModuleWeights &w, const std::string &prefix, int64_t dim_, float eps_) : dim(dim_), eps(eps_) {
    if (dim <= 0) fail("RMSNorm ", prefix, ": bad size ", dim);
    weight = w.get(prefix + ".weight", {dim}, WeightUse::f32);
}

ggml_tensor *RMSNorm::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (!weight) fail("RMSNorm used before it was bound");
    check_dim("RMSNorm", weight, 0, x, dim);
    return ggml_mul(ctx, ggml_rms_norm(ctx, x, eps), weight);
}

GroupNorm::GroupNorm(ModuleWeights &w, const std::string &prefix, int groups_, int64_t channels_, float eps_,
                     bool affine)
    : groups(groups_), channels(channels_), eps(eps_) {
    if (groups <= 0 || channels <= 0 || channels % groups != 0)
        fail("GroupNorm ", prefix, ": ", channels, " channels cannot form ", groups, " groups");
    if (affine) {
        weight = w.get(prefix + ".weight", {channels}, WeightUse::f32);
        bias = w.get(prefix + ".bias", {channels}, WeightUse::f32);
    }
}

ggml_tensor *GroupNorm::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (channels == 0) fail("GroupNorm used before it was bound");
    if (x->ne[1] != channels || x->ne[3] != 1)
        fail("GroupNorm: input must be ggml [T, ", channels, ", B], got [", x->ne[0], ", ", x->ne[1], ", ", x->ne[2],
             ", ", x->ne[3], "]");
    // ggml_group_norm groups ggml dimension 2: view the input as [T, 1, C, B].
    const int64_t frames = x->ne[0], batch = x->ne[2];
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor *y = ggml_group_norm(ctx, ggml_reshape_4d(ctx, x, frames, 1, channels, batch), groups, eps);
    return channel_affine(ctx, ggml_reshape_3d(ctx, y, frames, channels, batch), weight, bias);
}

BatchNorm1d::BatchNorm1d(ModuleWeights &w, const std::string &prefix, int64_t channels_, float eps, bool affine)
    : channels(channels_), on_cpu(w.on_cpu()) {
    if (channels <= 0) fail("BatchNorm1d ", prefix, ": bad channel count ", channels);
    const Shape shape = {channels};
    const std::vector<float> mean = w.host_f32(prefix + ".running_mean", shape);
    const std::vector<float> var = w.host_f32(prefix + ".running_var", shape);
    std::vector<float> gamma(static_cast<size_t>(channels), 1.0f), beta(static_cast<size_t>(channels), 0.0f);
    if (affine) {
        gamma = w.host_f32(prefix + ".weight", shape);
        beta = w.host_f32(prefix + ".bias", shape);
    }
    w.ignore(prefix + ".num_batches_tracked");

    std::vector<float> scale_values(static_cast<size_t>(channels)), shift_values(static_cast<size_t>(channels));
    for (size_t c = 0; c < size_t(channels); ++c) {
        if (!(double(var[c]) + double(eps) > 0))
            fail("BatchNorm1d ", w.prefix(), prefix, ": running_var[", c, "] = ", var[c], " is not a variance");
        const double s = double(gamma[c]) / std::sqrt(double(var[c]) + double(eps));
        scale_values[c] = float(s);
        shift_values[c] = float(double(beta[c]) - double(mean[c]) * s);
    }
    scale = w.derived(prefix + ".scale", shape, std::move(scale_values));
    shift = w.derived(prefix + ".shift", shape, std::move(shift_values));
}

ggml_tensor *BatchNorm1d::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (!scale) fail("BatchNorm1d used before it was bound");
    check_dim("BatchNorm1d", scale, 1, x, channels);
    return on_cpu ? kernels::channel_affine(ctx, x, scale, shift, false) : channel_affine(ctx, x, scale, shift);
}

ggml_tensor *BatchNorm1d::relu(ggml_context *ctx, ggml_tensor *x) const {
    if (!scale) fail("BatchNorm1d used before it was bound");
    check_dim("BatchNorm1d", scale, 1, x, channels);
    return on_cpu ? kernels::channel_affine(ctx, x, scale, shift, true)
                  : ggml_relu(ctx, channel_affine(ctx, x, scale, shift));
}

ggml_tensor *BatchNorm1d::features(ggml_context *ctx, ggml_tensor *x) const {
    if (!scale) fail("BatchNorm1d used before it was bound");
    check_dim("BatchNorm1d", scale, 0, x, channels);
    return ggml_add(ctx, ggml_mul(ctx, x, scale), shift);
}

} // namespace chatterbox::nn
