// Conv1d (on the direct kernel and as im2col + product) and ConvTranspose1d against naive
// double-precision loops.

#include "nn_harness.h"

#include "core/error.h"
#include "kernels/conv_kernel.h"
#include "modules/conv1d.h"
#include "modules/conv_transpose1d.h"

namespace chatterbox {
namespace {

using test::NnHarness;

struct ConvCase {
    int64_t batch, in, out, length;
    int kernel;
    nn::ConvOptions options;
};

// x: (B, C_in, T); w: (C_out, C_in / groups, K); result (B, C_out, T_out).
std::vector<double> naive_conv1d(const ConvCase &c, const std::vector<float> &x, const std::vector<float> &w,
                                 const std::vector<float> &bias) {
    const nn::ConvOptions &o = c.options;
    const int pad_left = o.causal ? o.dilation * (c.kernel - 1) : o.pad_left;
    const int pad_right = o.causal ? 0 : o.pad_right;
    const bool depthwise = o.groups > 1;
    const int64_t t_out = (c.length + pad_left + pad_right - int64_t(o.dilation) * (c.kernel - 1) - 1) / o.stride + 1;
    std::vector<double> y(size_t(c.batch * c.out * t_out), 0.0);
    for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t oc = 0; oc < c.out; ++oc)
            for (int64_t t = 0; t < t_out; ++t) {
                double sum = bias.empty() ? 0.0 : bias[size_t(oc)];
                for (int64_t ic = 0; ic < c.in; ++ic) {
                    if (depthwise && ic != oc) continue;
                    const int64_t w_ic = depthwise ? 0 : ic;
                    const int64_t w_in = depthwise ? 1 : c.in;
                    for (int k = 0; k < c.kernel; ++k) {
                        const int64_t src = t * o.stride + int64_t(k) * o.dilation - pad_left;
                        if (src < 0 || src >= c.length) continue;
                        sum += double(w[size_t((oc * w_in + w_ic) * c.kernel + k)]) *
                               x[size_t((b * c.in + ic) * c.length + src)];
                    }
                }
                y[size_t((b * c.out + oc) * t_out + t)] = sum;
            }
    return y;
}

// Runs a Conv1d bound from stored weights `w_values` (already in the store as m.conv.*).
void check_conv(NnHarness &h, const ConvCase &c, const std::vector<float> &w_values, const std::vector<float> &bias,
                double tolerance, const std::string &what) {
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::Conv1d conv(w, "conv", c.in, c.out, c.kernel, c.options);
    w.load();
    const auto x = h.input(size_t(c.batch * c.in * c.length));
    Shape out_shape;
    const auto y = h.run(
        {c.batch, c.in, c.length}, x, [&](ggml_context *ctx, ggml_tensor *in) { return conv(ctx, in); }, &out_shape);
    const auto expected = naive_conv1d(c, x, w_values, bias);
    EXPECT_EQ(out_shape, (Shape{1, c.batch, c.out, conv.output_length(c.length)})) << what;
    test::expect_close(y, expected, tolerance, what);
}

// Each case on the CPU's direct convolution kernel where one runs (kernels/conv_kernel.h), and as
// im2col and a product (every direct kernel disabled).
void conv_case(const ConvCase &c, ggml_type type, double tolerance, const std::string &what, bool flattened = false) {
    for (const bool direct : {true, false}) {
        BackendOptions options{"cpu", 2};
        if (!direct)
            for (const kernels::ConvKernel *kernel : kernels::conv_kernels())
                options.kernels.disable.push_back(kernel->name());
        NnHarness h(options);
        const int64_t in_per_group = c.options.groups > 1 ? 1 : c.in;
        const float scale = 1.0f / std::sqrt(float(in_per_group * c.kernel));
        const Shape shape = flattened ? Shape{c.out, in_per_group * c.kernel} : Shape{c.out, in_per_group, c.kernel};
        const auto w_values = h.add("m.conv.weight", shape, type, -scale, scale);
        std::vector<float> bias;
        if (c.options.bias) bias = h.add("m.conv.bias", {c.out});
        check_conv(h, c, w_values, bias, tolerance, what + (direct ? "" : ", im2col"));
    }
}

TEST(NnConv1d, MatchesNaiveF32) {
    using O = nn::ConvOptions;
    conv_case({1, 5, 7, 11, 3, O().with_padding(1)}, GGML_TYPE_F32, 1e-5, "k3 pad 1, odd length");
    conv_case({2, 6, 4, 13, 5, O().with_stride(2).with_padding(2)}, GGML_TYPE_F32, 1e-5, "batch 2, stride 2");
    conv_case({2, 4, 5, 10, 3, O().with_dilation(3).with_padding(3)}, GGML_TYPE_F32, 1e-5, "dilation 3");
    conv_case({2, 3, 4, 9, 3, O().with_causal_padding().with_dilation(2)}, GGML_TYPE_F32, 1e-5, "causal, dilation 2");
    conv_case({2, 4, 4, 8, 4, O().with_padding(0, 3)}, GGML_TYPE_F32, 1e-5, "right padding only");
    conv_case({1, 4, 4, 8, 5, O().with_padding(4, 0).with_stride(3)}, GGML_TYPE_F32, 1e-5, "left padding, stride 3");
    conv_case({2, 8, 3, 7, 1, O().without_bias()}, GGML_TYPE_F32, 1e-5, "pointwise, no bias");
    conv_case({1, 3, 2, 4, 7, O().with_padding(3)}, GGML_TYPE_F32, 1e-5, "kernel longer than the input");
}

TEST(NnConv1d, DepthwiseMatchesNaive) {
    using O = nn::ConvOptions;
    conv_case({2, 6, 6, 12, 5, O().with_groups(6).with_padding(2)}, GGML_TYPE_F32, 1e-5, "depthwise");
    conv_case({1, 5, 5, 9, 31, O().with_groups(5).with_padding(15).without_bias()}, GGML_TYPE_F32, 1e-5,
              "depthwise k31 (FSMN)");
    conv_case({2, 4, 4, 11, 3, O().with_groups(4).with_causal_padding().with_stride(2)}, GGML_TYPE_F32, 1e-5,
              "depthwise causal stride 2");
    conv_case({2, 3, 3, 10, 3, O().with_groups(3).with_dilation(3).with_padding(1)}, GGML_TYPE_F32, 1e-5,
              "depthwise dilation 3, taps reaching past both ends");
    conv_case({1, 2, 2, 4, 9, O().with_groups(2).with_padding(4).with_stride(3)}, GGML_TYPE_F32, 1e-5,
              "depthwise, kernel longer than the input, stride 3");
}

TEST(NnConv1d, ReducedPrecisionWeights) {
    using O = nn::ConvOptions;
    // f16 weights: ggml rounds the activations to f16 as well.
    conv_case({2, 16, 8, 15, 3, O().with_padding(1)}, GGML_TYPE_F16, 1e-3, "f16 weights");
    // q8_0 needs rows of whole 32-value blocks: the kernel is stored flattened to (out, in * k).
    conv_case({2, 16, 8, 15, 4, O().with_padding(2, 1)}, GGML_TYPE_Q8_0, 1.5e-2, "q8_0 flattened weights", true);
    conv_case({1, 16, 8, 9, 2, O().with_stride(2)}, GGML_TYPE_F32, 1e-5, "f32 flattened weights", true);
}

TEST(NnConv1d, WeightNormed) {
    NnHarness h;
    const ConvCase c{2, 4, 6, 10, 3, nn::ConvOptions().with_padding(1).with_weight_norm()};
    const auto g = h.add("m.conv.parametrizations.weight.original0", {6, 1, 1}, GGML_TYPE_F32, 0.5f, 1.5f);
    const auto v = h.add("m.conv.parametrizations.weight.original1", {6, 4, 3});
    const auto bias = h.add("m.conv.bias", {6});
    std::vector<float> folded(v.size());
    for (size_t oc = 0; oc < 6; ++oc) {
        double norm = 0;
        for (size_t i = 0; i < 12; ++i) norm += double(v[oc * 12 + i]) * v[oc * 12 + i];
        for (size_t i = 0; i < 12; ++i) folded[oc * 12 + i] = float(g[oc] * v[oc * 12 + i] / std::sqrt(norm));
    }
    check_conv(h, c, folded, bias, 1e-5, "weight-normed conv");
}

TEST(NnConv1d, RejectsBadInputAndConfiguration) {
    NnHarness h;
    h.add("m.conv.weight", {4, 3, 5});
    h.add("m.conv.bias", {4});
    ModuleWeights w(h.store(), "m.", h.backend());
    EXPECT_THROW(nn::Conv1d(w, "bad", 4, 4, 3, nn::ConvOptions().with_groups(2)), Error);
    EXPECT_THROW(nn::Conv1d(w, "bad", 4, 4, 3, nn::ConvOptions().with_causal_padding().with_padding(1)), Error);
    EXPECT_THROW(nn::Conv1d(w, "bad", 4, 4, 0), Error);
    nn::Conv1d conv(w, "conv", 3, 4, 5);
    w.load();
    GraphRunner g(h.backend());
    EXPECT_THROW(conv(g.ctx(), g.input("wrong_channels", GGML_TYPE_F32, {1, 4, 10})), Error);
    EXPECT_THROW(conv(g.ctx(), g.input("too_short", GGML_TYPE_F32, {1, 3, 4})), Error);
}

// x: (B, C_in, T); w: (C_in, C_out, K); result (B, C_out, T_out).
std::vector<double> naive_conv_transpose1d(const ConvCase &c, const std::vector<float> &x, const std::vector<float> &w,
                                           const std::vector<float> &bias) {
    const nn::ConvOptions &o = c.options;
    const int64_t t_out = (c.length - 1) * o.stride - 2 * o.pad_left + c.kernel + o.output_padding;
    std::vector<double> y(size_t(c.batch * c.out * t_out), 0.0);
    for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t oc = 0; oc < c.out; ++oc) {
            for (int64_t t = 0; t < t_out; ++t)
                y[size_t((b * c.out + oc) * t_out + t)] = bias.empty() ? 0 : bias[size_t(oc)];
            for (int64_t ic = 0; ic < c.in; ++ic)
                for (int64_t t = 0; t < c.length; ++t)
                    for (int k = 0; k < c.kernel; ++k) {
                        const int64_t dst = t * o.stride + k - o.pad_left;
                        if (dst < 0 || dst >= t_out) continue;
                        y[size_t((b * c.out + oc) * t_out + dst)] += double(x[size_t((b * c.in + ic) * c.length + t)]) *
                                                                     w[size_t((ic * c.out + oc) * c.kernel + k)];
                    }
        }
    return y;
}

void conv_transpose_case(const ConvCase &c, const std::string &what) {
    NnHarness h;
    const float scale = 1.0f / std::sqrt(float(c.out * c.kernel));
    std::vector<float> w_values, bias;
    if (c.options.weight_norm) {
        const auto g = h.add("m.up.weight_g", {c.in, 1, 1}, GGML_TYPE_F32, 0.5f, 1.5f);
        const auto v = h.add("m.up.weight_v", {c.in, c.out, c.kernel});
        const size_t per_input = size_t(c.out * c.kernel);
        w_values.resize(v.size());
        for (size_t ic = 0; ic < size_t(c.in); ++ic) {
            double norm = 0;
            for (size_t i = 0; i < per_input; ++i) norm += double(v[ic * per_input + i]) * v[ic * per_input + i];
            for (size_t i = 0; i < per_input; ++i)
                w_values[ic * per_input + i] = float(g[ic] * v[ic * per_input + i] / std::sqrt(norm));
        }
    } else {
        w_values = h.add("m.up.weight", {c.in, c.out, c.kernel}, GGML_TYPE_F32, -scale, scale);
    }
    if (c.options.bias) bias = h.add("m.up.bias", {c.out});

    ModuleWeights w(h.store(), "m.", h.backend());
    nn::ConvTranspose1d up(w, "up", c.in, c.out, c.kernel, c.options);
    w.load();
    const auto x = h.input(size_t(c.batch * c.in * c.length));
    Shape out_shape;
    const auto y = h.run(
        {c.batch, c.in, c.length}, x, [&](ggml_context *ctx, ggml_tensor *in) { return up(ctx, in); }, &out_shape);
    EXPECT_EQ(out_shape, (Shape{1, c.batch, c.out, up.output_length(c.length)})) << what;
    test::expect_close(y, naive_conv_transpose1d(c, x, w_values, bias), 1e-5, what);
}

TEST(NnConvTranspose1d, MatchesNaive) {
    using O = nn::ConvOptions;
    conv_transpose_case({1, 4, 3, 7, 4, O().with_stride(2).with_padding(1)}, "k4 stride 2 pad 1");
    conv_transpose_case({2, 6, 5, 9, 16, O().with_stride(8).with_padding(4)}, "batch 2, k16 stride 8 pad 4");
    conv_transpose_case({2, 5, 3, 5, 11, O().with_stride(5).with_padding(3).without_bias()}, "k11 stride 5, no bias");
    conv_transpose_case({2, 3, 4, 6, 7, O().with_stride(3).with_padding(2).with_output_padding(1)}, "output padding");
    conv_transpose_case({1, 3, 2, 5, 3, O().with_stride(2).with_output_padding(1)}, "output padding beyond the end");
    conv_transpose_case({1, 3, 2, 1, 5, O().with_stride(1)}, "one input frame");
}

TEST(NnConvTranspose1d, WeightNormedPerInputChannel) {
    conv_transpose_case({2, 5, 4, 6, 7, nn::ConvOptions().with_stride(3).with_padding(2).with_weight_norm()},
                        "weight-normed");
}

TEST(NnConvTranspose1d, RejectsBadInputAndConfiguration) {
    NnHarness h;
    h.add("m.up.weight", {4, 3, 4});
    h.add("m.up.bias", {3});
    ModuleWeights w(h.store(), "m.", h.backend());
    EXPECT_THROW(nn::ConvTranspose1d(w, "bad", 4, 3, 4, nn::ConvOptions().with_stride(2).with_output_padding(2)),
                 Error);
    EXPECT_THROW(nn::ConvTranspose1d(w, "bad", 4, 3, 4, nn::ConvOptions().with_dilation(2)), Error);
    nn::ConvTranspose1d up(w, "up", 4, 3, 4, nn::ConvOptions().with_stride(2));
    w.load();
    GraphRunner g(h.backend());
    EXPECT_THROW(up(g.ctx(), g.input("wrong_channels", GGML_TYPE_F32, {1, 3, 10})), Error);
}

} // namespace
} // namespace chatterbox
