// Linear, Embedding, norms, activations, Snake and feed-forward blocks against naive loops.

#include "nn_harness.h"

#include "core/error.h"
#include "kernels/layer_norm.h"
#include "kernels/vector_activations.h"
#include "modules/activations.h"
#include "modules/embedding.h"
#include "modules/feed_forward.h"
#include "modules/linear.h"
#include "modules/norm.h"
#include "modules/snake.h"

namespace chatterbox {
namespace {

using test::NnHarness;

// x: (rows, in), w: (out, in) -> (rows, out)
std::vector<double> naive_linear(const std::vector<float> &x, const std::vector<float> &w,
                                 const std::vector<float> &bias, int64_t in, int64_t out) {
    const int64_t rows = int64_t(x.size()) / in;
    std::vector<double> y(size_t(rows * out));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < out; ++o) {
            double sum = bias.empty() ? 0.0 : bias[size_t(o)];
            for (int64_t i = 0; i < in; ++i) sum += double(x[size_t(r * in + i)]) * w[size_t(o * in + i)];
            y[size_t(r * out + o)] = sum;
        }
    return y;
}

void linear_case(ggml_type type, bool bias, double tolerance, const std::string &what) {
    NnHarness h;
    const int64_t in = 64, out = 24, frames = 5, batch = 2;
    const float scale = 1.0f / std::sqrt(float(in));
    const auto w_values = h.add("m.proj.weight", {out, in}, type, -scale, scale);
    std::vector<float> b_values;
    if (bias) b_values = h.add("m.proj.bias", {out});
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::Linear proj(w, "proj", in, out, bias);
    w.load();
    const auto x = h.input(size_t(batch * frames * in));
    const auto y = h.run({batch, frames, in}, x, [&](ggml_context *ctx, ggml_tensor *t) { return proj(ctx, t); });
    test::expect_close(y, naive_linear(x, w_values, b_values, in, out), tolerance, what);
}

TEST(NnLinear, MatchesNaive) {
    linear_case(GGML_TYPE_F32, true, 1e-5, "f32 with bias");
    linear_case(GGML_TYPE_F32, false, 1e-5, "f32 without bias");
    linear_case(GGML_TYPE_F16, true, 1e-3, "f16");
    linear_case(GGML_TYPE_Q8_0, true, 1.5e-2, "q8_0");
}

// Quantised weights in the CPU's repacked layout give the products of the plain layout, for one or
// two rows (T3 decode with CFG) and for many (prefill), and really are repacked where ggml has kernels.
TEST(NnLinear, RepackedQuantisedWeightsMatchThePlainLayout) {
    const int64_t in = 512, out = 64; // q4_K blocks hold 256 values; repacking interleaves 8 rows
    for (const int64_t rows : {1, 2, 37}) {
        std::vector<float> results[2];
        for (const bool repack : {false, true}) {
            BackendOptions options{"cpu", 2};
            // ggml's repack alone here; tests/unit/test_q4k_kernels.cpp checks the engine's kernels.
            for (const kernels::MatmulKernel *kernel : kernels::matmul_kernels())
                if (!repack || std::string(kernel->name()) != "ggml_repack")
                    options.kernels.disable.push_back(kernel->name());
            NnHarness h(options);
            const auto w_values = h.add("m.proj.weight", {out, in}, GGML_TYPE_Q4_K, -0.05f, 0.05f);
            ModuleWeights w(h.store(), "m.", h.backend());
            nn::Linear proj(w, "proj", in, out, false);
            w.load();
            const bool repacked = std::string(ggml_backend_buffer_name(proj.weight->buffer)) == "CPU_REPACK";
            EXPECT_EQ(repacked, repack && Backend::cpu_has_feature("AVX2"))
                << ggml_backend_buffer_name(proj.weight->buffer);
            const auto x = h.input(size_t(rows * in));
            results[repack] = h.run({rows, in}, x, [&](ggml_context *ctx, ggml_tensor *t) { return proj(ctx, t); });
            test::expect_close(results[repack], naive_linear(x, w_values, {}, in, out), 2e-2,
                               repack ? "q4_K repacked" : "q4_K plain");
        }
        const std::vector<double> plain(results[0].begin(), results[0].end());
        test::expect_close(results[1], plain, 1e-4, "repacked vs plain, " + std::to_string(rows) + " rows");
    }
}

TEST(NnLinear, RejectsWrongInputSize) {
    NnHarness h;
    h.add("m.proj.weight", {4, 8});
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::Linear proj(w, "proj", 8, 4, false);
    w.load();
    GraphRunner g(h.backend());
    EXPECT_THROW(proj(g.ctx(), g.input("x", GGML_TYPE_F32, {3, 7})), Error);
}

TEST(NnEmbedding, LooksUpRowsForBatches) {
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
        NnHarness h;
        const int64_t count = 11, dim = 6;
        const auto table = h.add("m.emb.weight", {count, dim}, type);
        ModuleWeights w(h.store(), "m.", h.backend());
        nn::Embedding emb(w, "emb", count, dim);
        w.load();
        const std::vector<int32_t> ids = {3, 0, 10, 3, 7, 1}; // PyTorch (2, 3)
        emb.check_ids(ids);
        GraphRunner g(h.backend());
        ggml_tensor *in = g.input("ids", GGML_TYPE_I32, {2, 3});
        ggml_tensor *out = emb(g.ctx(), in);
        g.build({out});
        g.set_input(in, ids);
        g.compute();
        EXPECT_EQ(NnHarness::torch_shape_of_4d(out), (Shape{1, 2, 3, dim}));
        std::vector<double> expected;
        for (int32_t id : ids)
            for (int64_t d = 0; d < dim; ++d) expected.push_back(table[size_t(id * dim + d)]);
        test::expect_close(g.read_f32(out), expected, 0.0, ggml_type_name(type));
    }
}

TEST(NnEmbedding, RejectsOutOfRangeIds) {
    NnHarness h;
    h.add("m.emb.weight", {5, 2});
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::Embedding emb(w, "emb", 5, 2);
    EXPECT_THROW(emb.check_ids({0, 5}), Error);
    EXPECT_THROW(emb.check_ids({-1}), Error);
    EXPECT_NO_THROW(emb.check_ids({0, 4}));
}

// Normalises each run of `dim` consecutive values (mean-centred unless rms).
std::vector<double> naive_norm(const std::vector<float> &x, int64_t dim, double eps, bool rms) {
    std::vector<double> y(x.size());
    for (size_t start = 0; start < x.size(); start += size_t(dim)) {
        double mean = 0, sq = 0;
        for (int64_t i = 0; i < dim; ++i) mean += x[start + size_t(i)];
        mean = rms ? 0.0 : mean / double(dim);
        for (int64_t i = 0; i < dim; ++i) sq += (x[start + size_t(i)] - mean) * (x[start + size_t(i)] - mean);
        const double inv = 1.0 / std::sqrt(sq / double(dim) + eps);
        for (int64_t i = 0; i < dim; ++i) y[start + size_t(i)] = (x[start + size_t(i)] - mean) * inv;
    }
    return y;
}

TEST(NnNorm, LayerNormAndRmsNorm) {
    NnHarness h;
    const int64_t dim = 20, frames = 7, batch = 2;
    const auto gamma = h.add("m.ln.weight", {dim}, GGML_TYPE_F32, 0.5f, 1.5f);
    const auto beta = h.add("m.ln.bias", {dim});
    const auto rms_gamma = h.add("m.rms.weight", {dim}, GGML_TYPE_F32, 0.5f, 1.5f);
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::LayerNorm ln(w, "ln", dim, 1e-5f);
    nn::LayerNorm plain(w, "unused", dim, 1e-12f, /*affine=*/false);
    nn::RMSNorm rms(w, "rms", dim, 1e-6f);
    w.load();

    const auto x = h.input(size_t(batch * frames * dim), -2.0f, 3.0f);
    const Shape shape = {batch, frames, dim};
    auto normed = naive_norm(x, dim, 1e-5, false);
    std::vector<double> expected(x.size());
    for (size_t i = 0; i < x.size(); ++i) expected[i] = normed[i] * gamma[i % dim] + beta[i % dim];
    test::expect_close(h.run(shape, x, [&](ggml_context *c, ggml_tensor *t) { return ln(c, t); }), expected, 1e-5,
                       "layer norm");
    test::expect_close(h.run(shape, x, [&](ggml_context *c, ggml_tensor *t) { return plain(c, t); }),
                       naive_norm(x, dim, 1e-12, false), 1e-5, "layer norm without affine");

    auto rms_normed = naive_norm(x, dim, 1e-6, true);
    for (size_t i = 0; i < x.size(); ++i) rms_normed[i] *= rms_gamma[i % dim];
    test::expect_close(h.run(shape, x, [&](ggml_context *c, ggml_tensor *t) { return rms(c, t); }), rms_normed, 1e-5,
                       "rms norm");

    // Conv layout (B, C, T): normalised over C per frame.
    std::vector<float> x_ct(x.size());
    std::vector<double> expected_ct(x.size());
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < frames; ++t)
            for (int64_t c = 0; c < dim; ++c) {
                x_ct[size_t((b * dim + c) * frames + t)] = x[size_t((b * frames + t) * dim + c)];
                expected_ct[size_t((b * dim + c) * frames + t)] = expected[size_t((b * frames + t) * dim + c)];
            }
    test::expect_close(
        h.run({batch, dim, frames}, x_ct, [&](ggml_context *c, ggml_tensor *t) { return ln.over_channels(c, t); }),
        expected_ct, 1e-5, "layer norm over channels");
}

double naive_activation(nn::Activation a, double x);

// On a CPU, LayerNorm with Mish after it is one node (kernels/layer_norm.h): within 1e-5 of double
// precision over rows of several widths (whole vectors and a tail), with and without the affine map,
// from a strided view (rows apart), and each row's bits do not depend on the rows around it, the
// batch or the thread count.
TEST(NnNorm, LayerNormThenMishIsOneCpuNodeIndependentOfPlace) {
    for (int64_t dim : {256, 37}) {
        SCOPED_TRACE(dim);
        const int64_t frames = 9, batch = 3;
        std::vector<float> by_threads[2];
        for (int threads : {1, 2}) {
            NnHarness h(BackendOptions{"cpu", threads});
            const auto gamma = h.add("m.ln.weight", {dim}, GGML_TYPE_F32, 0.5f, 1.5f);
            const auto beta = h.add("m.ln.bias", {dim});
            ModuleWeights w(h.store(), "m.", h.backend());
            nn::LayerNorm ln(w, "ln", dim, 1e-5f);
            nn::LayerNorm plain(w, "unused", dim, 1e-5f, /*affine=*/false);
            w.load();
            const auto x = test::random_values(size_t(batch * frames * dim), 3, -4.0f, 6.0f);
            const auto normed = naive_norm(x, dim, 1e-5, false);
            std::vector<double> expected(x.size()), expected_plain(x.size());
            for (size_t i = 0; i < x.size(); ++i) {
                expected[i] =
                    naive_activation(nn::Activation::mish, normed[i] * gamma[i % size_t(dim)] + beta[i % size_t(dim)]);
                expected_plain[i] = naive_activation(nn::Activation::mish, normed[i]);
            }
            std::string node;
            const auto y = h.run({batch, frames, dim}, x, [&](ggml_context *c, ggml_tensor *t) {
                ggml_tensor *out = ln.then_mish(c, t);
                node = ggml_get_name(out);
                return out;
            });
            EXPECT_EQ(node, "layer_norm.mish");
            test::expect_close(y, expected, 1e-5, "layer norm then mish");
            test::expect_close(
                h.run({batch, frames, dim}, x, [&](ggml_context *c, ggml_tensor *t) { return plain.then_mish(c, t); }),
                expected_plain, 1e-5, "without affine");
            // The frames as a view of every other row of a wider tensor: the same bits.
            std::vector<float> spaced(x.size() * 2, 100.0f);
            for (int64_t r = 0; r < batch * frames; ++r)
                std::copy_n(x.begin() + r * dim, dim, spaced.begin() + 2 * r * dim);
            const auto z = h.run({batch * frames, 2, dim}, spaced, [&](ggml_context *c, ggml_tensor *t) {
                return ln.then_mish(c, ggml_view_2d(c, t, dim, batch * frames, t->nb[2], 0));
            });
            EXPECT_EQ(z, y);
            // One frame alone: its row's bits.
            const std::vector<float> last(x.end() - dim, x.end());
            const auto alone =
                h.run({1, 1, dim}, last, [&](ggml_context *c, ggml_tensor *t) { return ln.then_mish(c, t); });
            EXPECT_TRUE(std::equal(alone.begin(), alone.end(), y.end() - dim));
            by_threads[threads - 1] = y;
        }
        EXPECT_EQ(by_threads[0], by_threads[1]);
    }
}

// The one-exponential Mish of the norm kernel against double precision, past the softplus threshold
// and at the ends of the float range.
TEST(NnNorm, NormKernelMishMatchesNaive) {
    std::vector<float> x = test::random_values(4001, 17, -30.0f, 30.0f);
    for (float edge : {0.0f, -0.0f, 1e-8f, -1e-8f, 8.9f, 19.99f, 20.0f, 20.01f, 88.7f, 1e30f, -87.5f, -100.0f, -1e30f})
        x.push_back(edge);
    for (float v : x)
        ASSERT_NEAR(kernels::mish_value(v), naive_activation(nn::Activation::mish, v),
                    1e-6 * std::max(1.0, std::fabs(double(v))))
            << "x = " << v;
}

TEST(NnNorm, GroupNorm) {
    NnHarness h;
    const int64_t channels = 12, frames = 9, batch = 2;
    const int groups = 4;
    const auto gamma = h.add("m.gn.weight", {channels}, GGML_TYPE_F32, 0.5f, 1.5f);
    const auto beta = h.add("m.gn.bias", {channels});
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::GroupNorm gn(w, "gn", groups, channels, 1e-5f);
    EXPECT_THROW(nn::GroupNorm(w, "bad", 5, channels), Error);
    w.load();
    const auto x = h.input(size_t(batch * channels * frames), -1.0f, 2.0f);
    // Each (batch, group) is a contiguous run of channels/groups * frames values in (B, C, T).
    const int64_t run = channels / groups * frames;
    auto expected = naive_norm(x, run, 1e-5, false);
    for (size_t i = 0; i < x.size(); ++i) {
        const size_t c = (i / size_t(frames)) % size_t(channels);
        expected[i] = expected[i] * gamma[c] + beta[c];
    }
    test::expect_close(h.run({batch, channels, frames}, x, [&](ggml_context *c, ggml_tensor *t) { return gn(c, t); }),
                       expected, 1e-5, "group norm");
}

TEST(NnNorm, BatchNormIsFoldedIntoScaleAndShift) {
    NnHarness h;
    const int64_t channels = 6, frames = 5, batch = 2;
    const float eps = 1e-5f;
    const auto mean = h.add("m.bn.running_mean", {channels});
    const auto var = h.add("m.bn.running_var", {channels}, GGML_TYPE_F32, 0.5f, 2.0f);
    const auto gamma = h.add("m.bn.weight", {channels}, GGML_TYPE_F32, 0.5f, 1.5f);
    const auto beta = h.add("m.bn.bias", {channels});
    h.store().add_tensor(HostTensor("m.bn.num_batches_tracked", GGML_TYPE_I64, {}));
    const auto plain_mean = h.add("m.plain.running_mean", {channels});
    const auto plain_var = h.add("m.plain.running_var", {channels}, GGML_TYPE_F32, 0.5f, 2.0f);
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::BatchNorm1d bn(w, "bn", channels, eps);
    nn::BatchNorm1d plain(w, "plain", channels, eps, /*affine=*/false);
    w.load(); // num_batches_tracked is not unexpected

    auto reference = [&](float value, size_t c) {
        return (value - mean[c]) / std::sqrt(double(var[c]) + eps) * gamma[c] + beta[c];
    };
    const auto x = h.input(size_t(batch * channels * frames), -2.0f, 2.0f);
    std::vector<double> expected(x.size());
    for (size_t i = 0; i < x.size(); ++i) expected[i] = reference(x[i], (i / size_t(frames)) % size_t(channels));
    test::expect_close(h.run({batch, channels, frames}, x, [&](ggml_context *c, ggml_tensor *t) { return bn(c, t); }),
                       expected, 1e-5, "batch norm, conv layout");
    for (double &v : expected) v = std::max(v, 0.0);
    test::expect_close(
        h.run({batch, channels, frames}, x, [&](ggml_context *c, ggml_tensor *t) { return bn.relu(c, t); }), expected,
        1e-5, "batch norm and ReLU in one pass");
    // A transposed view is made contiguous first: ggml [C, T, B] seen as [T, C, B].
    std::vector<float> time_major(x.size());
    for (size_t b = 0; b < size_t(batch); ++b)
        for (size_t c = 0; c < size_t(channels); ++c)
            for (size_t t = 0; t < size_t(frames); ++t)
                time_major[(b * size_t(frames) + t) * size_t(channels) + c] =
                    x[(b * size_t(channels) + c) * size_t(frames) + t];
    test::expect_close(h.run({batch, frames, channels}, time_major,
                             [&](ggml_context *c, ggml_tensor *t) { return bn.relu(c, ggml_transpose(c, t)); }),
                       expected, 1e-5, "batch norm and ReLU of a transposed view");

    const auto e = h.input(size_t(batch * channels));
    std::vector<double> expected_features(e.size());
    for (size_t i = 0; i < e.size(); ++i) expected_features[i] = reference(e[i], i % size_t(channels));
    test::expect_close(h.run({batch, channels}, e, [&](ggml_context *c, ggml_tensor *t) { return bn.features(c, t); }),
                       expected_features, 1e-5, "batch norm, features");
    for (size_t i = 0; i < e.size(); ++i) {
        const size_t c = i % size_t(channels);
        expected_features[i] = (e[i] - plain_mean[c]) / std::sqrt(double(plain_var[c]) + eps);
    }
    test::expect_close(
        h.run({batch, channels}, e, [&](ggml_context *c, ggml_tensor *t) { return plain.features(c, t); }),
        expected_features, 1e-5, "batch norm without affine");
}

TEST(NnNorm, BatchNormRejectsNegativeVariance) {
    NnHarness h;
    h.add("m.bn.running_mean", {3});
    h.add_values("m.bn.running_var", {3}, {1.0f, -2.0f, 1.0f});
    ModuleWeights w(h.store(), "m.", h.backend());
    EXPECT_THROW(nn::BatchNorm1d(w, "bn", 3, 1e-5f, false), Error);
}

double naive_activation(nn::Activation a, double x) {
    switch (a) {
    case nn::Activation::relu:
        return x > 0 ? x : 0;
    case nn::Activation::elu:
        return x > 0 ? x : std::expm1(x);
    case nn::Activation::silu:
        return x / (1 + std::exp(-x));
    case nn::Activation::sigmoid:
        return 1 / (1 + std::exp(-x));
    case nn::Activation::tanh:
        return std::tanh(x);
    case nn::Activation::gelu_erf:
        return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case nn::Activation::gelu_tanh:
        return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case nn::Activation::mish:
        return x * std::tanh(x > 20 ? x : std::log1p(std::exp(x)));
    }
    return NAN;
}

TEST(NnActivations, MatchNaive) {
    NnHarness h;
    const auto x = h.input(301, -8.0f, 8.0f);
    const Shape shape = {7, 43};
    for (const char *name : {"relu", "elu", "silu", "sigmoid", "tanh", "gelu", "gelu_new", "mish"}) {
        const nn::Activation a = nn::activation_from_name(name);
        std::vector<double> expected(x.size());
        for (size_t i = 0; i < x.size(); ++i) expected[i] = naive_activation(a, x[i]);
        test::expect_close(h.run(shape, x, [&](ggml_context *c, ggml_tensor *t) { return nn::activate(c, t, a); }),
                           expected, 1e-5, name);
    }
    std::vector<double> leaky(x.size());
    for (size_t i = 0; i < x.size(); ++i) leaky[i] = x[i] > 0 ? x[i] : 0.1 * x[i];
    test::expect_close(h.run(shape, x, [&](ggml_context *c, ggml_tensor *t) { return nn::leaky_relu(c, t, 0.1f); }),
                       leaky, 1e-6, "leaky_relu 0.1");
    EXPECT_THROW(nn::activation_from_name("swishy"), Error);
}

// GELU (erf and tanh) and Mish on a CPU backend take the engine's vector kernels (kernels/vector_activations.h):
// within 1e-6 · max(1, |x|) of double precision, as ggml's scalar ops are, over the range the flow
// sees and past Mish's softplus threshold; and an element's bits do not depend on where it sits in
// the tensor or on the thread count.
TEST(NnActivations, CpuVectorKernelsMatchNaiveAndIgnorePosition) {
    if (!kernels::vector_activations_available()) GTEST_SKIP() << "no vector activation kernels in this build";
    std::vector<float> x = test::random_values(997, 11, -12.0f, 12.0f);
    for (float edge : {0.0f, -0.0f, 19.99f, 20.0f, 20.01f, 30.0f, 88.7f, 100.0f, -30.0f, -100.0f, 1e-8f, -1e-8f})
        x.push_back(edge);
    for (nn::Activation a : {nn::Activation::gelu_erf, nn::Activation::gelu_tanh, nn::Activation::mish}) {
        SCOPED_TRACE(int(a));
        std::vector<float> by_position[2];
        for (int threads : {1, 2}) {
            NnHarness h(BackendOptions{"cpu", threads});
            std::string node;
            const std::vector<float> y = h.run({int64_t(x.size())}, x, [&](ggml_context *c, ggml_tensor *t) {
                ggml_tensor *out = nn::activate(c, t, a, /*on_cpu=*/true);
                node = ggml_get_name(out);
                return out;
            });
            EXPECT_NE(node.find(".vector"), std::string::npos) << "took ggml's op: " << node;
            for (size_t i = 0; i < x.size(); ++i)
                ASSERT_NEAR(y[i], naive_activation(a, x[i]), 1e-6 * std::max(1.0, std::fabs(double(x[i]))))
                    << "x = " << x[i];
            // The same values three places on and in a 2-D shape: other vector lanes, another split.
            std::vector<float> shifted(3, 0.5f);
            shifted.insert(shifted.end(), x.begin(), x.end());
            shifted.resize(shifted.size() + 2, 0.5f); // 1014 = 6 × 169
            const std::vector<float> z = h.run({6, 169}, shifted, [&](ggml_context *c, ggml_tensor *t) {
                return nn::activate(c, t, a, /*on_cpu=*/true);
            });
            for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(z[i + 3], y[i]) << "x = " << x[i];
            by_position[threads - 1] = y;
        }
        EXPECT_EQ(by_position[0], by_position[1]);
    }
}

// A strided input (a transposed view) is made contiguous first.
TEST(NnActivations, CpuVectorKernelsTakeStridedInputs) {
    if (!kernels::vector_activations_available()) GTEST_SKIP() << "no vector activation kernels in this build";
    NnHarness h;
    const auto x = h.input(5 * 7, -4.0f, 4.0f);
    const std::vector<float> y = h.run({5, 7}, x, [&](ggml_context *c, ggml_tensor *t) {
        return nn::activate(c, ggml_transpose(c, t), nn::Activation::mish, /*on_cpu=*/true);
    });
    for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 7; ++j)
            EXPECT_NEAR(y[size_t(j * 5 + i)], naive_activation(nn::Activation::mish, x[size_t(i * 7 + j)]), 1e-5);
}

// On the CPU backend Snake is the engine's one-pass vector kernel (whole vectors and a tail here).
TEST(NnSnake, MatchesNaive) {
    NnHarness h;
    const int64_t channels = 5, frames = 37, batch = 2;
    const auto alpha = h.add("m.act.alpha", {channels}, GGML_TYPE_F32, 0.2f, 1.8f);
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::Snake snake(w, "act", channels);
    w.load();
    const auto x = h.input(size_t(batch * channels * frames), -3.0f, 3.0f);
    std::vector<double> expected(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const double a = alpha[(i / size_t(frames)) % size_t(channels)];
        const double s = std::sin(a * x[i]);
        expected[i] = x[i] + 1.0 / (a + 1e-9) * s * s;
    }
    test::expect_close(
        h.run({batch, channels, frames}, x, [&](ggml_context *c, ggml_tensor *t) { return snake(c, t); }), expected,
        1e-5, "snake");
}

TEST(NnFeedForward, PlainAndGated) {
    NnHarness h;
    const int64_t dim = 16, hidden = 40, frames = 3, batch = 2;
    const auto up_w = h.add("m.up.weight", {hidden, dim}, GGML_TYPE_F32, -0.25f, 0.25f);
    const auto up_b = h.add("m.up.bias", {hidden});
    const auto gate_w = h.add("m.gate.weight", {hidden, dim}, GGML_TYPE_F32, -0.25f, 0.25f);
    const auto down_w = h.add("m.down.weight", {dim, hidden}, GGML_TYPE_F32, -0.15f, 0.15f);
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::FeedForward ff(nn::Linear(w, "up", dim, hidden), nn::Linear(w, "down", hidden, dim, false),
                       nn::Activation::gelu_erf);
    // The gated block reuses "up" without its bias: a separate binding of the same weight.
    nn::GatedFeedForward swiglu(nn::Linear(w, "gate", dim, hidden, false), nn::Linear(w, "up", dim, hidden, false),
                                nn::Linear(w, "down", hidden, dim, false));
    EXPECT_THROW(nn::FeedForward(nn::Linear(w, "up", dim, hidden), nn::Linear(w, "gate", dim, hidden, false),
                                 nn::Activation::relu),
                 Error);
    w.load();
    const auto x = h.input(size_t(batch * frames * dim));

    auto up = naive_linear(x, up_w, up_b, dim, hidden);
    std::vector<float> act(up.size());
    for (size_t i = 0; i < up.size(); ++i) act[i] = float(naive_activation(nn::Activation::gelu_erf, up[i]));
    test::expect_close(h.run({batch, frames, dim}, x, [&](ggml_context *c, ggml_tensor *t) { return ff(c, t); }),
                       naive_linear(act, down_w, {}, hidden, dim), 1e-5, "feed-forward");

    const auto gate = naive_linear(x, gate_w, {}, dim, hidden);
    const auto up_nobias = naive_linear(x, up_w, {}, dim, hidden);
    for (size_t i = 0; i < gate.size(); ++i)
        act[i] = float(naive_activation(nn::Activation::silu, gate[i]) * up_nobias[i]);
    test::expect_close(h.run({batch, frames, dim}, x, [&](ggml_context *c, ggml_tensor *t) { return swiglu(c, t); }),
                       naive_linear(act, down_w, {}, hidden, dim), 1e-5, "swiglu");
}

} // namespace
} // namespace chatterbox
