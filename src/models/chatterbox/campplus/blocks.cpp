#include "models/chatterbox/campplus/blocks.h"

#include "core/error.h"
#include "modules/activations.h"
#include "modules/matmul.h"

#include <algorithm>

namespace chatterbox::campplus {

namespace {

constexpr int64_t kBottleneck = 128; // bn_size 4 x growth 32
constexpr int64_t kGrowth = 32;

} // namespace

Conv2d::Conv2d(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, int kernel, int freq_stride)
    : direct(w.conv_kernel()), in(in), out(out), kernel(kernel), freq_stride(freq_stride) {
    const Shape shape{out, in, kernel, kernel};
    if (!direct) {
        weight = w.get(prefix + ".weight", shape, WeightUse::f32);
        return;
    }
    // (C_out, C_in, K_freq, K_time) -> (C_out, K_freq, C_in, K_time): the channel of input row f·s + kf
    // and channel i is kf·C_in + i in the direct kernel's input.
    const std::vector<float> stored = w.host_f32(prefix + ".weight", shape);
    std::vector<float> by_freq_tap(stored.size());
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i)
            for (int64_t kf = 0; kf < kernel; ++kf)
                for (int64_t kt = 0; kt < kernel; ++kt)
                    by_freq_tap[size_t(((o * kernel + kf) * in + i) * kernel + kt)] =
                        stored[size_t(((o * in + i) * kernel + kf) * kernel + kt)];
    weight = w.derived(prefix + ".weight_by_freq_tap", {out, kernel * in, kernel}, std::move(by_freq_tap));
}

ggml_tensor *Conv2d::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (x->ne[2] != in) fail("campplus Conv2d: input has ", x->ne[2], " channels, expected ", in);
    const int pad = kernel / 2;
    if (direct) {
        // ggml [T, F, C_in] -> per output row f', the rows f'·s + kf − pad of every channel:
        // ggml [T, K·C_in, F'] (channel kf·C_in + i), the frequency padding as zero rows.
        ggml_tensor *padded = pad ? ggml_pad_ext(ctx, x, 0, 0, pad, pad, 0, 0, 0, 0) : x;
        const int64_t rows = (x->ne[1] + 2 * pad - kernel) / freq_stride + 1;
        ggml_tensor *taps = nullptr;
        for (int kf = 0; kf < kernel; ++kf) {
            ggml_tensor *tap = ggml_view_3d(ctx, padded, padded->ne[0], rows, in, freq_stride * padded->nb[1],
                                            padded->nb[2], size_t(kf) * padded->nb[1]); // [T, F', C_in]
            tap = ggml_permute(ctx, tap, 0, 2, 1, 3);                                   // [T, C_in, F']
            taps = taps ? ggml_concat(ctx, taps, tap, 1) : tap;
        }
        ggml_tensor *y = direct->conv1d(ctx, taps, weight, nullptr, 1, pad, pad); // [T, C_out, F']
        return ggml_cont(ctx, ggml_permute(ctx, y, 0, 2, 1, 3));                  // [T, F', C_out]
    }
    // im2col rows: (C_in, K_freq, K_time) with time fastest, as the PyTorch kernel is laid out.
    ggml_tensor *columns = ggml_im2col(ctx, weight, x, /*s0 time*/ 1, freq_stride, pad, pad, 1, 1, true, GGML_TYPE_F32);
    const int64_t rows = columns->ne[0], out_time = columns->ne[1], out_freq = columns->ne[2];
    ggml_tensor *flat = ggml_reshape_2d(ctx, columns, rows, out_time * out_freq);
    ggml_tensor *kernel_rows = ggml_reshape_2d(ctx, weight, rows, out);
    ggml_tensor *y = nn::product(ctx, flat, kernel_rows); // [T' F', C_out]
    return ggml_reshape_4d(ctx, y, out_time, out_freq, out, 1);
}

ggml_tensor *batch_norm_2d(ggml_context *ctx, const nn::BatchNorm1d &bn, ggml_tensor *x, bool relu) {
    ggml_tensor *flat = ggml_reshape_3d(ctx, x, x->ne[0] * x->ne[1], x->ne[2], 1);
    return ggml_reshape_4d(ctx, relu ? bn.relu(ctx, flat) : bn(ctx, flat), x->ne[0], x->ne[1], x->ne[2], 1);
}

BasicResBlock::BasicResBlock(ModuleWeights &w, const std::string &prefix, int64_t channels, int freq_stride)
    : conv1(w, prefix + ".conv1", channels, channels, 3, freq_stride),
      conv2(w, prefix + ".conv2", channels, channels, 3, 1), bn1(w, prefix + ".bn1", channels),
      bn2(w, prefix + ".bn2", channels), projected_shortcut(freq_stride != 1) {
    if (projected_shortcut) {
        shortcut = Conv2d(w, prefix + ".shortcut.0", channels, channels, 1, freq_stride);
        shortcut_bn = nn::BatchNorm1d(w, prefix + ".shortcut.1", channels);
    }
}

ggml_tensor *BasicResBlock::operator()(ggml_context *ctx, ggml_tensor *x) const {
    ggml_tensor *y = batch_norm_2d(ctx, bn1, conv1(ctx, x), true);
    y = batch_norm_2d(ctx, bn2, conv2(ctx, y), false);
    ggml_tensor *skip = projected_shortcut ? batch_norm_2d(ctx, shortcut_bn, shortcut(ctx, x), false) : x;
    return nn::relu(ctx, ggml_add(ctx, y, skip));
}

FcmHead::FcmHead(ModuleWeights &w, const std::string &prefix)
    : conv1(w, prefix + ".conv1", 1, 32, 3, 1), conv2(w, prefix + ".conv2", 32, 32, 3, 2), bn1(w, prefix + ".bn1", 32),
      bn2(w, prefix + ".bn2", 32) {
    for (const char *layer : {".layer1", ".layer2"}) {
        blocks.emplace_back(w, prefix + layer + ".0", 32, 2);
        blocks.emplace_back(w, prefix + layer + ".1", 32, 1);
    }
}

ggml_tensor *FcmHead::operator()(ggml_context *ctx, ggml_tensor *x) const {
    ggml_tensor *y = ggml_reshape_4d(ctx, x, x->ne[0], x->ne[1], 1, 1); // one input channel
    y = batch_norm_2d(ctx, bn1, conv1(ctx, y), true);
    for (const BasicResBlock &block : blocks) y = block(ctx, y);
    y = batch_norm_2d(ctx, bn2, conv2(ctx, y), true);
    // (C, F, T) -> (C * F, T): ggml [T, F, C] is already channel-major.
    return ggml_reshape_3d(ctx, y, y->ne[0], y->ne[1] * y->ne[2], 1);
}

std::vector<float> SegmentPooling::pool_values(int64_t frames) {
    const int64_t n_segments = segments(frames);
    std::vector<float> values(size_t(frames * n_segments));
    for (int64_t s = 0; s < n_segments; ++s) {
        const int64_t begin = s * kSegmentFrames, end = std::min(frames, begin + kSegmentFrames);
        // avg_pool1d(ceil_mode=True) divides the last, partial segment by its actual length.
        for (int64_t t = 0; t < frames; ++t)
            values[size_t(s * frames + t)] =
                1.0f / float(frames) + (t >= begin && t < end ? 1.0f / float(end - begin) : 0.0f);
    }
    return values;
}

std::vector<float> SegmentPooling::expand_values(int64_t frames) {
    const int64_t n_segments = segments(frames);
    std::vector<float> values(size_t(n_segments * frames), 0.0f);
    for (int64_t t = 0; t < frames; ++t) values[size_t(t * n_segments + t / kSegmentFrames)] = 1.0f;
    return values;
}

CamDenseTdnnLayer::CamDenseTdnnLayer(ModuleWeights &w, const std::string &prefix, int64_t in, int dilation)
    : bn1(w, prefix + ".nonlinear1.batchnorm", in), bn2(w, prefix + ".nonlinear2.batchnorm", kBottleneck),
      linear1(w, prefix + ".linear1", in, kBottleneck, 1, nn::ConvOptions().without_bias()),
      linear_local(w, prefix + ".cam_layer.linear_local", kBottleneck, kGrowth, 3,
                   nn::ConvOptions().with_dilation(dilation).with_padding(dilation).without_bias()),
      context1(w, prefix + ".cam_layer.linear1", kBottleneck, kBottleneck / 2, 1),
      context2(w, prefix + ".cam_layer.linear2", kBottleneck / 2, kGrowth, 1) {}

ggml_tensor *CamDenseTdnnLayer::operator()(ggml_context *ctx, ggml_tensor *x, const SegmentPooling &pooling) const {
    ggml_tensor *y = linear1(ctx, bn1.relu(ctx, x));
    y = bn2.relu(ctx, y); // ggml [T, 128, 1]
    ggml_tensor *local = linear_local(ctx, y);
    // Per-segment contexts ggml [S, 128] -> masks [S, 32] -> one per frame [T, 32].
    ggml_tensor *frames = ggml_reshape_2d(ctx, y, y->ne[0], y->ne[1]);
    ggml_tensor *context = nn::product(ctx, pooling.pool, frames);
    ggml_tensor *mask = nn::sigmoid(ctx, context2(ctx, nn::relu(ctx, context1(ctx, context))));
    mask = ggml_reshape_2d(ctx, mask, mask->ne[0], mask->ne[1]);
    ggml_tensor *frame_mask = nn::product(ctx, pooling.expand, mask);
    return ggml_mul(ctx, local, ggml_reshape_3d(ctx, frame_mask, frame_mask->ne[0], frame_mask->ne[1], 1));
}

DenseTdnnBlock::DenseTdnnBlock(ModuleWeights &w, const std::string &prefix, int n_layers, int64_t in, int dilation) {
    for (int l = 0; l < n_layers; ++l)
        layers.emplace_back(w, prefix + ".tdnnd" + std::to_string(l + 1), in + kGrowth * l, dilation);
}

ggml_tensor *DenseTdnnBlock::operator()(ggml_context *ctx, ggml_tensor *x, const SegmentPooling &pooling) const {
    for (const CamDenseTdnnLayer &layer : layers) x = ggml_concat(ctx, x, layer(ctx, x, pooling), 1);
    return x;
}

TransitLayer::TransitLayer(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out)
    : bn(w, prefix + ".nonlinear.batchnorm", in),
      linear(w, prefix + ".linear", in, out, 1, nn::ConvOptions().without_bias()) {}

ggml_tensor *TransitLayer::operator()(ggml_context *ctx, ggml_tensor *x) const { return linear(ctx, bn.relu(ctx, x)); }

} // namespace chatterbox::campplus
