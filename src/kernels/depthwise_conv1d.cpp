#include "kernels/depthwise_conv1d.h"

#include "core/error.h"
#include "kernels/interned.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace chatterbox::kernels {

namespace {

constexpr const char *kNodeName = "depthwise_conv1d";

// What the op needs beyond its tensors (its userdata: interned).
struct Geometry {
    int64_t stride, dilation, pad_left;
    bool operator<(const Geometry &o) const {
        return std::tie(stride, dilation, pad_left) < std::tie(o.stride, o.dilation, o.pad_left);
    }
};

// The first output t >= 0 whose input t·stride + offset is >= 0, and the end of those whose input is
// < t_in (both clamped to [0, t_out]).
std::pair<int64_t, int64_t> outputs_inside(int64_t offset, int64_t stride, int64_t t_in, int64_t t_out) {
    const int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    const int64_t last_input = t_in - 1 - offset; // t·stride <= last_input
    const int64_t end = last_input < 0 ? 0 : last_input / stride + 1;
    return {std::min(first, t_out), std::clamp(end, std::min(first, t_out), t_out)};
}

void depthwise_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    const Geometry &g = *static_cast<const Geometry *>(userdata);
    const ggml_tensor *x = dst->src[0], *kernel = dst->src[1];
    const int64_t t_in = x->ne[0], channels = x->ne[1], t_out = dst->ne[0], taps = kernel->ne[0];
    const int64_t rows = channels * x->ne[2];
    for (int64_t row = rows * ith / nth; row < rows * (ith + 1) / nth; ++row) {
        const float *in = static_cast<const float *>(x->data) + row * t_in;
        const float *w = static_cast<const float *>(kernel->data) + (row % channels) * taps;
        float *y = static_cast<float *>(dst->data) + row * t_out;
        std::memset(y, 0, size_t(t_out) * sizeof(float));
        for (int64_t k = 0; k < taps; ++k) {
            const int64_t offset = k * g.dilation - g.pad_left;
            const auto [begin, end] = outputs_inside(offset, g.stride, t_in, t_out);
            const float tap = w[k];
            if (g.stride == 1) { // contiguous: vectorised
                for (int64_t t = begin; t < end; ++t) y[t] += tap * in[t + offset];
            } else {
                for (int64_t t = begin; t < end; ++t) y[t] += tap * in[t * g.stride + offset];
            }
        }
    }
}

} // namespace

ggml_tensor *depthwise_conv1d(ggml_context *ctx, ggml_tensor *x, ggml_tensor *kernel, int stride, int dilation,
                              int pad_left, int pad_right) {
    const int64_t taps = kernel->ne[0], span = int64_t(dilation) * (taps - 1) + 1;
    const int64_t padded = x->ne[0] + pad_left + pad_right;
    if (x->type != GGML_TYPE_F32 || kernel->type != GGML_TYPE_F32 || ggml_nelements(kernel) != taps * x->ne[1] ||
        x->ne[3] != 1 || stride < 1 || dilation < 1 || pad_left < 0 || pad_right < 0 || padded < span)
        fail("depthwise_conv1d: needs f32 x [T, C, B] with T + padding >= ", span,
             ", an f32 kernel [K, C], stride and dilation >= 1, padding >= 0; got x ", ggml_type_name(x->type), " [",
             x->ne[0], ", ", x->ne[1], ", ", x->ne[2], ", ", x->ne[3], "], kernel ", ggml_type_name(kernel->type), " [",
             kernel->ne[0], ", ", kernel->ne[1], "], stride ", stride, ", dilation ", dilation, ", padding ", pad_left,
             "/", pad_right);
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    if (!ggml_is_contiguous(kernel)) kernel = ggml_cont(ctx, kernel);
    ggml_tensor *args[] = {x, kernel};
    ggml_tensor *y =
        ggml_custom_4d(ctx, GGML_TYPE_F32, (padded - span) / stride + 1, x->ne[1], x->ne[2], 1, args, 2, depthwise_op,
                       GGML_N_TASKS_MAX, const_cast<Geometry *>(interned(Geometry{stride, dilation, pad_left})));
    return ggml_set_name(y, kNodeName);
}

double depthwise_conv1d_flops(const ggml_tensor *node) {
    if (node->op != GGML_OP_CUSTOM || std::strcmp(node->name, kNodeName) != 0) return 0;
    return 2.0 * double(ggml_nelements(node)) * double(node->src[1]->ne[0]);
}

} // namespace chatterbox::kernels
