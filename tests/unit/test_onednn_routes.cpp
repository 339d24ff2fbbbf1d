// The oneDNN f32 matmul kernel (kernels/onednn.h): the custom op against a naive product (several
// shapes, odd column counts, one and two threads, so that the per-thread slices differ), and every
// module that multiplies through nn::matmul, its weights taken by the kernel, against the same module
// on ggml's product. The bf16 kernel against a naive product of bf16-rounded operands for every
// float weight type, and where it is chosen.

#include "nn_harness.h"

#include "core/error.h"
#include "kernels/onednn.h"
#include "models/chatterbox/s3gen/frame_conv.h"
#include "modules/conv1d.h"
#include "modules/conv_transpose1d.h"
#include "modules/linear.h"
#include "modules/matmul.h"

#include <cstring>
#include <map>
#include <thread>

namespace chatterbox {
namespace {

using test::NnHarness;

BackendOptions cpu_with(int threads, bool onednn) {
    BackendOptions options{"cpu", threads};
    if (onednn) options.kernels.enable = {"onednn_f32"};
    options.kernels.disable = {"conv1d_avx512", "conv1d_avx2"}; // convolutions as products, on either route
    options.adapt_threads = false; // the thread count must not drop on a busy machine: the slices differ by it
    return options;
}

TEST(OnednnMatmul, MatchesNaiveForEveryThreadSlice) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    struct Case {
        int64_t k, m, frames, rows;
    };
    for (int threads : {1, 2})
        for (const Case c : {Case{64, 24, 1, 1}, Case{33, 17, 5, 1}, Case{96, 40, 7, 2}, Case{256, 48, 151, 2}}) {
            const std::string what =
                concat("K ", c.k, " M ", c.m, " N ", c.frames, "x", c.rows, ", ", threads, " thread(s)");
            NnHarness h(cpu_with(threads, true));
            const auto w = h.input(size_t(c.k * c.m)), x = h.input(size_t(c.k * c.frames * c.rows));
            GraphRunner g(h.backend());
            ggml_tensor *weight = g.input("w", GGML_TYPE_F32, {c.m, c.k});
            ggml_tensor *in = g.input("x", GGML_TYPE_F32, {c.rows, c.frames, c.k});
            ggml_tensor *y = kernels::onednn_matmul(g.ctx(), weight, in);
            EXPECT_EQ(kernels::onednn_matmul_flops(y), 2.0 * double(c.k * c.m * c.frames * c.rows)) << what;
            g.build({y});
            g.set_input(weight, w);
            g.set_input(in, x);
            g.compute();
            std::vector<double> expected(size_t(c.m * c.frames * c.rows));
            for (int64_t n = 0; n < c.frames * c.rows; ++n)
                for (int64_t i = 0; i < c.m; ++i) {
                    double sum = 0;
                    for (int64_t j = 0; j < c.k; ++j) sum += double(w[size_t(i * c.k + j)]) * x[size_t(n * c.k + j)];
                    expected[size_t(n * c.m + i)] = sum;
                }
            EXPECT_EQ(NnHarness::torch_shape_of_4d(y), (Shape{1, c.rows, c.frames, c.m})) << what;
            test::expect_close(g.read_f32(y), expected, 1e-4, what);
        }
}

// Only f32 weights take the kernel, and only where it is enabled; the others stay ggml's.
TEST(OnednnMatmul, OnlyF32WeightsTakeTheKernel) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    for (const bool enabled : {false, true}) {
        NnHarness h(cpu_with(2, enabled));
        h.add("m.f32.weight", {8, 64});
        h.add("m.f16.weight", {8, 64}, GGML_TYPE_F16);
        ModuleWeights w(h.store(), "m.", h.backend());
        const nn::Linear f32(w, "f32", 64, 8, false), f16(w, "f16", 64, 8, false);
        w.load();
        GraphRunner g(h.backend());
        ggml_tensor *x = g.input("x", GGML_TYPE_F32, {3, 64});
        EXPECT_EQ(std::string(ggml_get_name(f32(g.ctx(), x))) == "onednn.matmul", enabled);
        EXPECT_EQ(f16(g.ctx(), x)->op, GGML_OP_MUL_MAT);
        const std::map<std::string, int> expected =
            enabled ? std::map<std::string, int>{{"onednn_f32", 1}, {"ggml_mul_mat", 1}}
                    : std::map<std::string, int>{{"ggml_mul_mat", 2}};
        EXPECT_EQ(w.matmul_kernel_counts(), expected);
    }
}

// Builds the same module on the ggml and the oneDNN route from one store and compares the outputs.
template <class Module>
void expect_routes_agree(const std::string &what, const Shape &input_shape,
                         const std::function<Module(ModuleWeights &)> &bind,
                         const std::function<void(NnHarness &)> &add_weights) {
    std::vector<float> outputs[2];
    for (int threads : {1, 2}) {
        for (const bool onednn : {false, true}) {
            NnHarness h(cpu_with(threads, onednn));
            add_weights(h); // same seeds: the same weights and input on both routes
            ModuleWeights w(h.store(), "m.", h.backend());
            const Module module = bind(w);
            w.load();
            EXPECT_EQ(w.matmul_kernel_counts(),
                      (std::map<std::string, int>{{onednn ? "onednn_f32" : "ggml_mul_mat", 1}}))
                << what;
            const auto x = h.input(size_t(shape_numel(input_shape)));
            outputs[onednn] =
                h.run(input_shape, x, [&](ggml_context *ctx, ggml_tensor *in) { return module(ctx, in); });
        }
        std::vector<double> reference(outputs[0].begin(), outputs[0].end());
        test::expect_close(outputs[1], reference, 1e-5, concat(what, ", ", threads, " thread(s)"));
    }
}

// nn::Linear with GELU after it, as the flow's feed-forward asks for it: on the oneDNN route the
// bias and the GELU are the product's epilogue.
struct LinearThenGelu {
    nn::Linear linear;
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const {
        return linear.then(ctx, x, nn::Activation::gelu_erf, /*on_cpu=*/true);
    }
};

TEST(OnednnMatmul, ModulesAgreeWithTheGgmlRoute) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    expect_routes_agree<LinearThenGelu>(
        "Linear then GELU", {2, 13, 48}, [](ModuleWeights &w) { return LinearThenGelu{nn::Linear(w, "proj", 48, 20)}; },
        [](NnHarness &h) {
            h.add("m.proj.weight", {20, 48});
            h.add("m.proj.bias", {20});
        });
    expect_routes_agree<nn::Linear>(
        "Linear", {2, 13, 48}, [](ModuleWeights &w) { return nn::Linear(w, "proj", 48, 20); },
        [](NnHarness &h) {
            h.add("m.proj.weight", {20, 48});
            h.add("m.proj.bias", {20});
        });
    expect_routes_agree<nn::Conv1d>(
        "Conv1d k3", {2, 12, 17},
        [](ModuleWeights &w) { return nn::Conv1d(w, "conv", 12, 10, 3, nn::ConvOptions().with_padding(1)); },
        [](NnHarness &h) {
            h.add("m.conv.weight", {10, 12, 3});
            h.add("m.conv.bias", {10});
        });
    expect_routes_agree<nn::ConvTranspose1d>(
        "ConvTranspose1d", {1, 6, 9},
        [](ModuleWeights &w) {
            return nn::ConvTranspose1d(w, "up", 6, 4, 4, nn::ConvOptions().with_stride(2).with_padding(1));
        },
        [](NnHarness &h) {
            h.add("m.up.weight", {6, 4, 4});
            h.add("m.up.bias", {4});
        });
    expect_routes_agree<s3gen::FrameConv1d>(
        "FrameConv1d causal k3", {2, 11, 16},
        [](ModuleWeights &w) { return s3gen::FrameConv1d(w, "conv", 16, 8, 3, 2, 0); },
        [](NnHarness &h) {
            h.add("m.conv.weight", {8, 16, 3});
            h.add("m.conv.bias", {8});
        });
}

// Weights bound on the onednn route are reordered once into oneDNN's layout and shared: sessions
// (each its own Backend) running concurrently on 2 threads build graphs on them and must all get the
// ggml route's result; and weights loaded again (a new buffer, perhaps at the old address) must not
// be served the copies of the weights before them.
TEST(OnednnMatmul, ReorderedWeightsAreSharedByConcurrentSessions) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    const Shape input_shape{2, 24, 40};
    auto add_weights = [](NnHarness &h) {
        h.add("m.conv.weight", {32, 24, 3}); // bound as the matrix (32, 72)
        h.add("m.conv.bias", {32});
        h.add("m.proj.weight", {20, 32});
    };
    auto build = [](const nn::Conv1d &conv, const nn::Linear &proj) {
        return [&conv, &proj](ggml_context *ctx, ggml_tensor *in) {
            return proj(ctx, ggml_cont(ctx, ggml_transpose(ctx, conv(ctx, in))));
        };
    };
    auto bind_conv = [](ModuleWeights &w) {
        return nn::Conv1d(w, "conv", 24, 32, 3, nn::ConvOptions().with_padding(1));
    };
    auto bind_proj = [](ModuleWeights &w) { return nn::Linear(w, "proj", 32, 20, false); };

    for (int load = 0; load < 2; ++load) {
        // Each load draws other weights and input (the harness's seeds move on by `load`).
        auto prepare = [&](NnHarness &h) {
            for (int skip = 0; skip < load; ++skip) h.input(1);
            add_weights(h);
            return h.input(size_t(shape_numel(input_shape)));
        };
        NnHarness ggml_route(cpu_with(2, false));
        const std::vector<float> reference_x = prepare(ggml_route);
        ModuleWeights ggml_weights(ggml_route.store(), "m.", ggml_route.backend());
        const nn::Conv1d ggml_conv = bind_conv(ggml_weights);
        const nn::Linear ggml_proj = bind_proj(ggml_weights);
        ggml_weights.load();
        const std::vector<float> out = ggml_route.run(input_shape, reference_x, build(ggml_conv, ggml_proj));
        const std::vector<double> expected(out.begin(), out.end());

        NnHarness h(cpu_with(2, true));
        const std::vector<float> x = prepare(h);
        ModuleWeights w(h.store(), "m.", h.backend());
        const nn::Conv1d conv = bind_conv(w);
        const nn::Linear proj = bind_proj(w);
        w.load();
        std::vector<float> results[2];
        std::vector<std::thread> sessions;
        for (std::vector<float> &result : results)
            sessions.emplace_back([&] {
                Backend backend(cpu_with(2, true));
                GraphRunner graph(backend);
                ggml_tensor *in = graph.input("x", GGML_TYPE_F32, input_shape);
                ggml_tensor *y = build(conv, proj)(graph.ctx(), in);
                graph.build({y});
                graph.set_input(in, x);
                for (int run = 0; run < 3; ++run) graph.compute();
                result = graph.read_f32(y);
            });
        for (std::thread &session : sessions) session.join();
        for (int session = 0; session < 2; ++session)
            test::expect_close(results[session], expected, 1e-5, concat("load ", load, ", session ", session));
    }
}

// Names are checked when weights are bound: an unknown kernel, or one this build cannot run.
TEST(OnednnMatmul, TheSelectionIsCheckedAtLoad) {
    KernelSelection unknown;
    unknown.enable = {"blas"};
    NnHarness h(BackendOptions{"cpu", 2, true, unknown});
    h.add("m.proj.weight", {4, 8});
    ModuleWeights w(h.store(), "m.", h.backend());
    const nn::Linear proj(w, "proj", 8, 4, false);
    EXPECT_THROW(w.load(), InvalidArgument);
    KernelSelection onednn;
    onednn.enable = {"onednn_f32"};
    if (kernels::onednn_available())
        EXPECT_NO_THROW(kernels::check_kernel_selection(onednn));
    else
        EXPECT_THROW(kernels::check_kernel_selection(onednn), InvalidArgument);
}

// ---------------------------------------------------------------------------- the bf16 product

// x rounded to the nearest bf16, ties to even (as the kernel rounds weights and activations).
float bf16_rounded(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000u;
    std::memcpy(&x, &bits, sizeof bits);
    return x;
}

// y = x · weightᵀ of a Linear whose weights are bound for bf16 products, with 1 or 2 threads.
std::vector<float> bf16_linear(int threads, ggml_type type, int64_t k, int64_t m, int64_t columns,
                               std::vector<float> *stored_weight = nullptr, std::vector<float> *input = nullptr) {
    BackendOptions options{"cpu", threads};
    options.adapt_threads = false;
    NnHarness h(options);
    const std::vector<float> stored = h.add("m.proj.weight", {m, k}, type);
    ModuleWeights w(h.store(), "m.", h.backend(), kernels::ProductPrecision::bf16);
    const nn::Linear linear(w, "proj", k, m, false);
    w.load();
    EXPECT_EQ(w.matmul_kernel_counts(), (std::map<std::string, int>{{"onednn_bf16", 1}})) << ggml_type_name(type);
    const std::vector<float> x = h.input(size_t(k * columns));
    if (stored_weight) *stored_weight = stored;
    if (input) *input = x;
    return h.run({columns, k}, x, [&](ggml_context *ctx, ggml_tensor *in) { return linear(ctx, in); });
}

// Every float type, odd column counts, against a naive product of the bf16-rounded operands summed
// in double; one and two threads (different slices) give the same bits.
TEST(OnednnBf16, MatchesTheProductOfRoundedOperandsForEveryType) {
    if (!kernels::onednn_bf16_kernel().runs_here())
        GTEST_SKIP() << "onednn_bf16 cannot run here: " << kernels::onednn_bf16_kernel().why_not_here();
    for (const ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K})
        for (const int64_t columns : {int64_t(1), int64_t(7), int64_t(151)}) {
            const int64_t k = 512, m = 40;
            const std::string what = concat(ggml_type_name(type), ", ", columns, " column(s)");
            std::vector<float> weight, x;
            const std::vector<float> one = bf16_linear(1, type, k, m, columns, &weight, &x);
            EXPECT_EQ(one, bf16_linear(2, type, k, m, columns)) << what << ": the slices changed the bits";
            std::vector<double> expected(size_t(columns * m));
            for (int64_t n = 0; n < columns; ++n)
                for (int64_t i = 0; i < m; ++i) {
                    double sum = 0;
                    for (int64_t j = 0; j < k; ++j)
                        sum += double(bf16_rounded(weight[size_t(i * k + j)])) * bf16_rounded(x[size_t(n * k + j)]);
                    expected[size_t(n * m + i)] = sum;
                }
            test::expect_close(one, expected, 1e-4, what);
        }
}

// A bias, and GELU after it, are applied by the product itself (one node) and match them applied
// after it by ggml and the vector GELU.
TEST(OnednnMatmul, BiasAndGeluAreTheProductsEpilogue) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    NnHarness h(cpu_with(2, true));
    h.add("m.proj.weight", {24, 64});
    h.add("m.proj.bias", {24});
    ModuleWeights w(h.store(), "m.", h.backend());
    const nn::Linear linear(w, "proj", 64, 24);
    w.load();
    const auto x = h.input(size_t(3 * 64), -3.0f, 3.0f);
    std::string fused_name;
    const std::vector<float> fused = h.run({3, 64}, x, [&](ggml_context *ctx, ggml_tensor *in) {
        ggml_tensor *y = linear.then(ctx, in, nn::Activation::gelu_erf, true);
        fused_name = ggml_get_name(y);
        return y;
    });
    EXPECT_EQ(fused_name, "onednn.matmul");
    const std::vector<float> apart = h.run({3, 64}, x, [&](ggml_context *ctx, ggml_tensor *in) {
        ggml_tensor *product = nn::matmul(ctx, linear.weight, in);
        return nn::activate(ctx, ggml_add(ctx, product, linear.bias), nn::Activation::gelu_erf, true);
    });
    test::expect_close(fused, std::vector<double>(apart.begin(), apart.end()), 1e-6, "bias and GELU");
}

// The kernel takes weights only where the component allows bf16 products, and not when disabled.
TEST(OnednnBf16, OnlyComponentsThatAllowBf16UseIt) {
    if (!kernels::onednn_bf16_kernel().runs_here())
        GTEST_SKIP() << "onednn_bf16 cannot run here: " << kernels::onednn_bf16_kernel().why_not_here();
    for (const bool disabled : {false, true})
        for (const kernels::ProductPrecision coarsest :
             {kernels::ProductPrecision::f32, kernels::ProductPrecision::bf16}) {
            BackendOptions options{"cpu", 2};
            if (disabled) options.kernels.disable = {"onednn_bf16"};
            NnHarness h(options);
            h.add("m.proj.weight", {8, 64});
            ModuleWeights w(h.store(), "m.", h.backend(), coarsest);
            const nn::Linear linear(w, "proj", 64, 8, false);
            w.load();
            const bool bf16 = !disabled && coarsest == kernels::ProductPrecision::bf16;
            EXPECT_EQ(w.matmul_kernel_counts(),
                      (std::map<std::string, int>{{bf16 ? "onednn_bf16" : "ggml_mul_mat", 1}}));
        }
}

} // namespace
} // namespace chatterbox
