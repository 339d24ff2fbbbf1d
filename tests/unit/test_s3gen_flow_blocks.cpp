// Building blocks of the S3Gen flow against naive double-precision references on random inputs:
// the frame-major convolution, ESPnet relative-position attention and its table, the CFM time
// grid, the timestep sinusoid and the seeded noise.

#include "nn_harness.h"

#include "core/error.h"
#include "core/graph.h"
#include "kernels/onednn.h"
#include "models/chatterbox/s3gen/estimator_blocks.h"
#include "models/chatterbox/s3gen/flow_cfm.h"
#include "models/chatterbox/s3gen/frame_conv.h"
#include "modules/rel_pos_attention.h"

#include <cmath>
#include <map>
#include <random>

namespace chatterbox {
namespace {

using test::expect_close;
using test::NnHarness;

// x: (B, T, C_in) frame-major; w: (C_out, C_in, K); result (B, T_out, C_out).
std::vector<double> naive_conv(const std::vector<float> &x, int64_t batch, int64_t frames, int64_t in,
                               const std::vector<float> &w, const std::vector<float> &bias, int64_t out, int kernel,
                               int pad_left, int pad_right) {
    const int64_t out_frames = frames + pad_left + pad_right - kernel + 1;
    std::vector<double> y(size_t(batch * out_frames * out));
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < out_frames; ++t)
            for (int64_t o = 0; o < out; ++o) {
                double sum = bias[size_t(o)];
                for (int64_t c = 0; c < in; ++c)
                    for (int k = 0; k < kernel; ++k) {
                        const int64_t source = t + k - pad_left;
                        if (source < 0 || source >= frames) continue;
                        sum += double(w[size_t((o * in + c) * kernel + k)]) * x[size_t((b * frames + source) * in + c)];
                    }
                y[size_t((b * out_frames + t) * out + o)] = sum;
            }
    return y;
}

struct ConvCase {
    int kernel, pad_left, pad_right;
    ggml_type type;
    bool flattened;
};

class FrameConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(FrameConvTest, MatchesNaiveConvolution) {
    const ConvCase c = GetParam();
    NnHarness h;
    const int64_t batch = 2, frames = 9, in = 6, out = 5;
    const Shape stored = c.flattened ? Shape{out, in * c.kernel} : Shape{out, in, c.kernel};
    const std::vector<float> w = h.add("conv.weight", stored, c.type);
    const std::vector<float> bias = h.add("conv.bias", {out});
    ModuleWeights weights(h.store(), "", h.backend());
    s3gen::FrameConv1d conv(weights, "conv", in, out, c.kernel, c.pad_left, c.pad_right);
    weights.load();

    const std::vector<float> x = h.input(size_t(batch * frames * in));
    Shape shape;
    bool gathers_columns = false; // on a CPU the product reads windows of the input in place
    const std::vector<float> y = h.run(
        {batch, frames, in}, x,
        [&](ggml_context *ctx, ggml_tensor *t) {
            ggml_tensor *out = conv(ctx, t);
            const std::function<bool(const ggml_tensor *)> im2col = [&](const ggml_tensor *node) {
                if (node->op == GGML_OP_IM2COL) return true;
                for (const ggml_tensor *src : node->src)
                    if (src && im2col(src)) return true;
                return false;
            };
            gathers_columns = im2col(out);
            return out;
        },
        &shape);
    EXPECT_FALSE(gathers_columns);
    const int64_t out_frames = frames + c.pad_left + c.pad_right - c.kernel + 1;
    EXPECT_EQ(shape, (Shape{1, batch, out_frames, out}));
    // f16 weights: ggml rounds the activations to f16 as well
    const double tolerance = c.type == GGML_TYPE_F32 ? 1e-5 : 2e-3;
    expect_close(y, naive_conv(x, batch, frames, in, w, bias, out, c.kernel, c.pad_left, c.pad_right), tolerance,
                 "frame conv");
}

INSTANTIATE_TEST_SUITE_P(Shapes, FrameConvTest,
                         ::testing::Values(ConvCase{3, 2, 0, GGML_TYPE_F32, false},  // causal (estimator)
                                           ConvCase{4, 0, 3, GGML_TYPE_F32, false},  // pre-lookahead conv1
                                           ConvCase{5, 4, 0, GGML_TYPE_F32, false},  // encoder upsample
                                           ConvCase{1, 0, 0, GGML_TYPE_F32, false},  // res_conv / final_proj
                                           ConvCase{3, 1, 1, GGML_TYPE_F16, false},  // f16 weights
                                           ConvCase{3, 2, 0, GGML_TYPE_F32, true})); // flattened (out, in*k)

TEST(FrameConv, TooFewFramesIsAnError) {
    NnHarness h;
    h.add("conv.weight", {4, 3, 5});
    h.add("conv.bias", {4});
    ModuleWeights weights(h.store(), "", h.backend());
    s3gen::FrameConv1d conv(weights, "conv", 3, 4, 5, 0, 0);
    weights.load();
    GraphRunner graph(h.backend());
    ggml_tensor *x = graph.input("x", GGML_TYPE_F32, {3, 3});
    EXPECT_THROW(conv(graph.ctx(), x), Error);
}

TEST(EspnetRelPosTable, RowsRunFromLargestOffsetToMostNegative) {
    const int64_t length = 6, dim = 8;
    const std::vector<float> table = nn::espnet_rel_pos_table(length, dim);
    ASSERT_EQ(table.size(), size_t((2 * length - 1) * dim));
    for (int64_t n = 0; n < 2 * length - 1; ++n) {
        const double r = double(length - 1 - n);
        for (int64_t k = 0; k < dim / 2; ++k) {
            const double w = std::exp(-2.0 * double(k) * std::log(10000.0) / double(dim));
            EXPECT_NEAR(table[size_t(n * dim + 2 * k)], std::sin(r * w), 1e-6) << "row " << n;
            EXPECT_NEAR(table[size_t(n * dim + 2 * k + 1)], std::cos(r * w), 1e-6) << "row " << n;
        }
    }
    EXPECT_THROW(nn::espnet_rel_pos_table(0, 8), Error);
    EXPECT_THROW(nn::espnet_rel_pos_table(4, 7), Error);
}

// A relative-position attention layer on random weights and inputs, and its naive double-precision
// result, for any path and thread count.
class RelPositionAttentionCase {
  public:
    RelPositionAttentionCase(int64_t batch, int64_t frames, int64_t dim, int heads)
        : batch_(batch), frames_(frames), dim_(dim), heads_(heads) {
        for (const char *name : {"linear_q", "linear_k", "linear_v", "linear_out"}) {
            p_[std::string(name) + ".weight"] =
                h_.add(std::string("attn.") + name + ".weight", {dim, dim}, GGML_TYPE_F32, -0.3f, 0.3f);
            p_[std::string(name) + ".bias"] = h_.add(std::string("attn.") + name + ".bias", {dim});
        }
        p_["linear_pos.weight"] = h_.add("attn.linear_pos.weight", {dim, dim}, GGML_TYPE_F32, -0.3f, 0.3f);
        p_["pos_bias_u"] = h_.add("attn.pos_bias_u", {heads, dim / heads});
        p_["pos_bias_v"] = h_.add("attn.pos_bias_v", {heads, dim / heads});
        x_ = h_.input(size_t(batch * frames * dim));
    }

    std::vector<float> run(nn::AttentionPath path, int threads) {
        Backend backend(BackendOptions{"cpu", threads});
        ModuleWeights weights(h_.store(), "", backend);
        nn::RelPositionAttention attention(weights, "attn", dim_, heads_);
        weights.load();
        GraphRunner graph(backend);
        ggml_tensor *in = graph.input("x", GGML_TYPE_F32, {batch_, frames_, dim_});
        ggml_tensor *pos = graph.input("pos", GGML_TYPE_F32, {2 * frames_ - 1, dim_});
        ggml_tensor *out = attention(graph.ctx(), in, pos, path);
        graph.build({out});
        graph.set_input(in, x_);
        graph.set_input(pos, nn::espnet_rel_pos_table(frames_, dim_));
        graph.compute();
        return graph.read_f32(out);
    }

    std::vector<double> naive() {
        const int64_t head_dim = dim_ / heads_, frames = frames_, dim = dim_;
        const size_t rows = size_t(batch_ * frames);
        const std::vector<double> q = linear(x_, rows, "linear_q", true), k = linear(x_, rows, "linear_k", true),
                                  v = linear(x_, rows, "linear_v", true);
        const std::vector<double> pe =
            linear(nn::espnet_rel_pos_table(frames, dim), size_t(2 * frames - 1), "linear_pos", false);
        std::vector<float> mixed(rows * size_t(dim));
        for (int64_t b = 0; b < batch_; ++b)
            for (int hd = 0; hd < heads_; ++hd)
                for (int64_t i = 0; i < frames; ++i) {
                    std::vector<double> s(static_cast<size_t>(frames));
                    double top = -INFINITY;
                    for (int64_t j = 0; j < frames; ++j) {
                        const int64_t row = frames - 1 - (i - j); // table row of offset i - j
                        double score = 0;
                        for (int64_t d = 0; d < head_dim; ++d) {
                            const size_t at = size_t(hd * head_dim + d);
                            const double qi = q[size_t(b * frames + i) * size_t(dim) + at];
                            score += (qi + p_["pos_bias_u"][at]) * k[size_t(b * frames + j) * size_t(dim) + at] +
                                     (qi + p_["pos_bias_v"][at]) * pe[size_t(row) * size_t(dim) + at];
                        }
                        s[size_t(j)] = score / std::sqrt(double(head_dim));
                        top = std::max(top, s[size_t(j)]);
                    }
                    double total = 0;
                    for (double &e : s) total += (e = std::exp(e - top));
                    for (int64_t d = 0; d < head_dim; ++d) {
                        double acc = 0;
                        for (int64_t j = 0; j < frames; ++j)
                            acc += s[size_t(j)] / total *
                                   v[size_t(b * frames + j) * size_t(dim) + size_t(hd * head_dim + d)];
                        mixed[size_t(b * frames + i) * size_t(dim) + size_t(hd * head_dim + d)] = float(acc);
                    }
                }
        return linear(mixed, rows, "linear_out", true);
    }

  private:
    // y = W x + b over rows of dim values
    std::vector<double> linear(const std::vector<float> &input, size_t rows, const std::string &name, bool bias) {
        const std::vector<float> &w = p_[name + ".weight"];
        std::vector<double> result(rows * size_t(dim_));
        for (size_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < dim_; ++o) {
                double s = bias ? p_[name + ".bias"][size_t(o)] : 0.0;
                for (int64_t i = 0; i < dim_; ++i)
                    s += double(w[size_t(o * dim_ + i)]) * input[r * size_t(dim_) + size_t(i)];
                result[r * size_t(dim_) + size_t(o)] = s;
            }
        return result;
    }

    NnHarness h_;
    int64_t batch_, frames_, dim_;
    int heads_;
    std::map<std::string, std::vector<float>> p_;
    std::vector<float> x_;
};

TEST(RelPositionAttention, MatchesNaiveReference) {
    RelPositionAttentionCase c(2, 7, 16, 2);
    expect_close(c.run(nn::AttentionPath::plain, 2), c.naive(), 2e-5, "relative-position attention");
}

// The blocked path (the flow encoder's on the CPU) over several 64-query blocks and a partial last
// one, whose windows of the positional table start at every offset: the naive result, the same bits
// on one and two threads.
TEST(RelPositionAttention, BlockedPathMatchesNaiveReference) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    RelPositionAttentionCase c(2, 150, 32, 2);
    const std::vector<float> one_thread = c.run(nn::AttentionPath::blocked, 1);
    expect_close(one_thread, c.naive(), 2e-5, "blocked");
    EXPECT_EQ(c.run(nn::AttentionPath::blocked, 2), one_thread) << "two threads";
}

TEST(RelPositionAttention, BlockedKernelRejectsWhatItDoesNotCompute) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    NnHarness h;
    GraphRunner g(h.backend());
    ggml_tensor *q = g.input("q", GGML_TYPE_F32, {1, 5, 2, 8}); // ggml [8, 2, 5, 1]
    ggml_tensor *table = g.input("table", GGML_TYPE_F32, {1, 9, 2, 8});
    auto blocked = [&](ggml_tensor *keys, const kernels::RelativePositions &relative) {
        return kernels::blocked_attention(g.ctx(), q, keys, keys, 1.0f, kernels::ProductPrecision::f32, relative);
    };
    EXPECT_NO_THROW(blocked(q, {q, table}));
    EXPECT_THROW(blocked(q, {q, nullptr}), Error) << "no table";
    EXPECT_THROW(blocked(q, {q, g.input("short", GGML_TYPE_F32, {1, 8, 2, 8})}), Error) << "table of 2n - 2 rows";
    EXPECT_THROW(blocked(g.input("longer", GGML_TYPE_F32, {1, 6, 2, 8}), {q, table}), Error) << "more keys";
    EXPECT_THROW(kernels::blocked_attention(g.ctx(), q, q, q, 1.0f, kernels::ProductPrecision::bf16, {q, table}), Error)
        << "bf16";
}

TEST(CosineTimeGrid, FollowsOneMinusCosine) {
    const std::vector<float> grid = s3gen::cosine_time_grid(10);
    ASSERT_EQ(grid.size(), 11u);
    EXPECT_EQ(grid.front(), 0.0f);
    EXPECT_NEAR(grid.back(), 1.0f, 1e-7);
    for (int k = 0; k <= 10; ++k) EXPECT_NEAR(grid[size_t(k)], 1.0 - std::cos(M_PI / 2 * k / 10.0), 2e-7) << k;
    EXPECT_THROW(s3gen::cosine_time_grid(0), Error);
}

TEST(TimestepSinusoid, SinesThenCosinesOfScaledTime) {
    const std::vector<float> at_zero = s3gen::timestep_sinusoid(0.0f, 320, 1000.0f);
    for (size_t k = 0; k < 160; ++k) {
        EXPECT_EQ(at_zero[k], 0.0f);
        EXPECT_EQ(at_zero[160 + k], 1.0f);
    }
    const float t = 0.37f;
    const std::vector<float> e = s3gen::timestep_sinusoid(t, 320, 1000.0f);
    for (size_t k = 0; k < 160; ++k) {
        const double angle = 1000.0 * t * std::exp(-double(k) * std::log(10000.0) / 159.0);
        EXPECT_NEAR(e[k], std::sin(angle), 5e-5) << k; // f32 angles of up to 370 rad
        EXPECT_NEAR(e[160 + k], std::cos(angle), 5e-5) << k;
    }
}

TEST(StandardNormal, SeededAndDistributedAsN01) {
    std::mt19937_64 a(7), b(7), c(8);
    const std::vector<float> x = s3gen::standard_normal(100001, a);
    EXPECT_EQ(x, s3gen::standard_normal(100001, b));
    EXPECT_NE(x, s3gen::standard_normal(100001, c));
    double mean = 0, square = 0;
    for (float v : x) {
        ASSERT_TRUE(std::isfinite(v));
        mean += v;
        square += double(v) * v;
    }
    mean /= double(x.size());
    EXPECT_NEAR(mean, 0.0, 0.01);
    EXPECT_NEAR(square / double(x.size()) - mean * mean, 1.0, 0.02);
}

} // namespace
} // namespace chatterbox
