// The direct convolution kernels (kernels/conv_kernel.h), every one this CPU runs (an AVX-512
// machine tests both forms): against a naive double-precision loop over kernel sizes, dilations,
// paddings (tiles that read zeros at either end, inputs shorter than a tile), channel counts that
// leave a partial block and lengths that end inside a vector; the same bits on
// 1 and 2 threads and for a batch item as alone; nn::Conv1d takes the first kernel the selection
// leaves in, and the im2col product where none is left.

#include "nn_harness.h"

#include "core/error.h"
#include "kernels/conv_kernel.h"
#include "kernels/matmul_kernel.h"
#include "modules/conv1d.h"

namespace chatterbox {
namespace {

using test::NnHarness;

struct Case {
    int64_t batch, in, out, t_in;
    int taps, dilation;
    bool bias;
    int pad_left = 0, pad_right = 0;
    int64_t t_out() const { return padded() - int64_t(dilation) * (taps - 1); }
    int64_t padded() const { return t_in + pad_left + pad_right; }
};

// x: (B, C_in, T_in), kernel: (C_out, C_in, K), zero padding; result (B, C_out, T_out).
std::vector<double> naive(const Case &c, const std::vector<float> &x, const std::vector<float> &w,
                          const std::vector<float> &bias) {
    const int64_t t_out = c.t_out();
    std::vector<double> y(size_t(c.batch * c.out * t_out));
    for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t o = 0; o < c.out; ++o)
            for (int64_t t = 0; t < t_out; ++t) {
                double sum = c.bias ? bias[size_t(o)] : 0.0;
                for (int64_t i = 0; i < c.in; ++i)
                    for (int k = 0; k < c.taps; ++k) {
                        const int64_t source = t + int64_t(k) * c.dilation - c.pad_left;
                        if (source >= 0 && source < c.t_in)
                            sum += double(w[size_t((o * c.in + i) * c.taps + k)]) *
                                   x[size_t((b * c.in + i) * c.t_in + source)];
                    }
                y[size_t((b * c.out + o) * t_out + t)] = sum;
            }
    return y;
}

// The kernel's output for `c` with `threads` threads.
std::vector<float> run_kernel(const kernels::ConvKernel &kernel, const Case &c, int threads, const std::vector<float> &x,
                              const std::vector<float> &w, const std::vector<float> &bias) {
    BackendOptions options{"cpu", threads};
    options.adapt_threads = false; // the thread split is what is compared
    Backend backend(options);
    GraphRunner graph(backend);
    ggml_tensor *in = graph.input("x", GGML_TYPE_F32, {c.batch, c.in, c.t_in});
    ggml_tensor *weights = graph.input("kernel", GGML_TYPE_F32, {c.out, c.in, int64_t(c.taps)});
    ggml_tensor *b = c.bias ? graph.input("bias", GGML_TYPE_F32, {c.out}) : nullptr;
    ggml_tensor *y = kernel.conv1d(graph.ctx(), in, weights, b, c.dilation, c.pad_left, c.pad_right);
    graph.build({y});
    graph.set_input(in, x);
    graph.set_input(weights, w);
    if (b) graph.set_input(b, bias);
    graph.compute();
    EXPECT_EQ(NnHarness::torch_shape_of_4d(y), (Shape{1, c.batch, c.out, c.t_out()}));
    return graph.read_f32(y);
}

std::vector<const kernels::ConvKernel *> kernels_here() {
    std::vector<const kernels::ConvKernel *> here;
    for (const kernels::ConvKernel *k : kernels::conv_kernels())
        if (k->runs_here()) here.push_back(k);
    return here;
}

TEST(ConvKernels, MatchNaiveAndDoNotDependOnThreadsOrBatch) {
    if (kernels_here().empty()) GTEST_SKIP() << "no direct convolution kernel runs here";
    const std::vector<Case> cases = {
        {2, 5, 18, 60, 3, 1, true},   // 18 channels: two blocks of 8 (or four of 4) and two single rows
        {1, 7, 8, 99, 11, 5, true},   // HiFT's widest dilated tap span: 49 outputs
        {2, 3, 4, 17, 1, 1, false},   // pointwise, no bias, one partial vector
        {1, 4, 9, 7, 7, 1, true},     // a single output
        {2, 16, 16, 113, 7, 3, true}, // several tiles and a partial last one
        {2, 6, 10, 130, 11, 5, true, 25, 25},    // HiFT's padding: tiles at both ends read zeros
        {1, 5, 9, 40, 3, 2, true, 4, 0},         // causal (left padding only)
        {2, 3, 5, 5, 7, 1, false, 3, 3},         // input shorter than one tile and than the kernel
        {1, 4, 8, 200, 3, 1, true, 1, 1},        // interior tiles read the input in place
    };
    for (const kernels::ConvKernel *kernel : kernels_here())
        for (const Case &c : cases) {
            const std::string what = concat(kernel->name(), ": ", c.batch, "x", c.in, "->", c.out, " T ", c.t_in,
                                            " K ", c.taps, " d ", c.dilation, " pad ", c.pad_left, "/", c.pad_right);
            const std::vector<float> x = test::random_values(size_t(c.batch * c.in * c.t_in), 7, -1.0f, 1.0f);
            const std::vector<float> w = test::random_values(size_t(c.out * c.in * c.taps), 8, -0.5f, 0.5f);
            const std::vector<float> bias = test::random_values(size_t(c.out), 9, -1.0f, 1.0f);
            const std::vector<float> two = run_kernel(*kernel, c, 2, x, w, bias);
            test::expect_close(two, naive(c, x, w, bias), 1e-5, what);
            EXPECT_EQ(run_kernel(*kernel, c, 1, x, w, bias), two) << what << ": 1 thread against 2";
            if (c.batch > 1) { // the last item alone
                Case alone = c;
                alone.batch = 1;
                const size_t in_size = size_t(c.in * c.t_in), out_size = two.size() / size_t(c.batch);
                const std::vector<float> last(x.end() - std::ptrdiff_t(in_size), x.end());
                EXPECT_EQ(run_kernel(*kernel, alone, 2, last, w, bias),
                          std::vector<float>(two.end() - std::ptrdiff_t(out_size), two.end()))
                    << what << ": a batch item against itself alone";
            }
        }
}

TEST(ConvKernels, BadOperandsAreRefused) {
    if (kernels_here().empty()) GTEST_SKIP() << "no direct convolution kernel runs here";
    Backend backend(BackendOptions{"cpu", 1});
    GraphRunner graph(backend);
    ggml_tensor *x = graph.input("x", GGML_TYPE_F32, {1, 4, 10});
    ggml_tensor *w = graph.input("kernel", GGML_TYPE_F32, {3, 4, 5});
    const kernels::ConvKernel &kernel = *kernels_here().front();
    EXPECT_THROW(kernel.conv1d(graph.ctx(), x, graph.input("other_in", GGML_TYPE_F32, {3, 5, 5}), nullptr, 1, 0, 0),
                 Error);
    EXPECT_THROW(kernel.conv1d(graph.ctx(), x, w, nullptr, 3, 1, 1), Error); // span 13 > 10 + 2
    EXPECT_THROW(kernel.conv1d(graph.ctx(), x, w, nullptr, 1, -1, 0), Error);
    EXPECT_THROW(kernel.conv1d(graph.ctx(), x, w, graph.input("bias", GGML_TYPE_F32, {4}), 1, 0, 0), Error);
    EXPECT_THROW(kernel.conv1d(graph.ctx(), x, graph.input("f16", GGML_TYPE_F16, {3, 4, 5}), nullptr, 1, 0, 0),
                 Error);
}

// nn::Conv1d: the first kernel left in computes a stride-1 convolution (the node is named after
// it); with every one disabled, and for a strided one, im2col and a product do.
TEST(ConvKernels, Conv1dTakesTheFirstKernelTheSelectionLeavesIn) {
    std::vector<std::string> disabled;
    for (const kernels::ConvKernel *expected : kernels_here()) {
        BackendOptions options{"cpu", 2};
        options.kernels.disable = disabled;
        NnHarness h(options);
        h.add("m.conv.weight", {6, 4, 3});
        h.add("m.conv.bias", {6});
        h.add("m.strided.weight", {6, 4, 3});
        ModuleWeights w(h.store(), "m.", h.backend());
        const nn::Conv1d conv(w, "conv", 4, 6, 3, nn::ConvOptions().with_padding(1));
        const nn::Conv1d strided(w, "strided", 4, 6, 3, nn::ConvOptions().with_stride(2).without_bias());
        w.load();
        EXPECT_EQ(conv.direct, expected) << expected->name();
        EXPECT_EQ(strided.direct, nullptr);
        GraphRunner g(h.backend());
        ggml_tensor *y = conv(g.ctx(), g.input("x", GGML_TYPE_F32, {1, 4, 20}));
        EXPECT_EQ(y->op, GGML_OP_CUSTOM) << expected->name();
        disabled.push_back(expected->name());
    }
    BackendOptions options{"cpu", 2};
    options.kernels.disable = disabled;
    NnHarness h(options);
    h.add("m.conv.weight", {6, 4, 3});
    h.add("m.conv.bias", {6});
    ModuleWeights w(h.store(), "m.", h.backend());
    const nn::Conv1d conv(w, "conv", 4, 6, 3, nn::ConvOptions().with_padding(1));
    w.load();
    EXPECT_EQ(conv.direct, nullptr);
    EXPECT_THROW(kernels::check_kernel_selection(KernelSelection{{"conv1d_avx2"}, {}, 0}), InvalidArgument); // on by default only
}

} // namespace
} // namespace chatterbox
