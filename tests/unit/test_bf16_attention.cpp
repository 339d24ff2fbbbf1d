// The blocked attention's bf16 products in AVX-512 BF16 (kernels/bf16_attention.h), where the CPU
// has them: the scores and the weighted values against naive sums in double of the bf16-rounded
// operands, for every head width they take and key counts that end inside a register block (odd
// ones too); a row's bits do not depend on the rows computed beside it. The whole attention at bf16
// is test_nn_attention's (NnAttention.BlockedPathInBf16).

#include "kernels/bf16_attention.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace chatterbox {
namespace {

namespace attention = kernels::bf16_attention;

std::vector<float> random_values(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    std::vector<float> x(n);
    for (float &v : x) v = u(rng);
    return x;
}

float rounded(float x) { return ggml_bf16_to_fp32(ggml_fp32_to_bf16(x)); }

std::vector<uint16_t> to_bf16(const std::vector<float> &x) {
    std::vector<uint16_t> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = ggml_fp32_to_bf16(x[i]).bits;
    return out;
}

TEST(Bf16Attention, ProductsMatchTheRoundedOperands) {
    if (!attention::runs_here()) GTEST_SKIP() << "the CPU has no AVX-512 BF16";
    for (int64_t d : {16, 32, 48, 64})
        for (int64_t n_kv : {1, 15, 16, 17, 64, 131, 1000})
            for (int64_t rows : {1, 5, 6, 13, 64}) {
                const std::string what =
                    "d " + std::to_string(d) + ", " + std::to_string(n_kv) + " keys, " + std::to_string(rows) + " rows";
                const int64_t key_stride = d + 3; // rows of a wider tensor, as a fused projection's views
                const std::vector<float> q = random_values(size_t(rows * d), 1),
                                         k = random_values(size_t(n_kv * key_stride), 2),
                                         v = random_values(size_t(n_kv * key_stride), 3),
                                         p = random_values(size_t(rows * n_kv), 4);
                std::vector<uint16_t> keys(size_t(attention::packed_keys_size(n_kv, d))),
                    values(size_t(attention::packed_values_size(n_kv, d)));
                attention::pack_keys(k.data(), n_kv, d, key_stride, keys.data());
                attention::pack_values(v.data(), n_kv, d, key_stride, values.data());

                const std::vector<uint16_t> q16 = to_bf16(q);
                const int64_t s_stride = attention::score_stride(n_kv);
                std::vector<float> s(size_t(rows * s_stride));
                attention::scores(q16.data(), rows, d, keys.data(), n_kv, s.data());
                const int64_t p_stride = attention::probability_stride(n_kv);
                std::vector<uint16_t> p16(size_t(rows * p_stride), 0);
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t j = 0; j < n_kv; ++j)
                        p16[size_t(r * p_stride + j)] = ggml_fp32_to_bf16(p[size_t(r * n_kv + j)]).bits;
                std::vector<float> inverse(static_cast<size_t>(rows)), out(static_cast<size_t>(rows * d * 2), -7.0f);
                for (int64_t r = 0; r < rows; ++r) inverse[size_t(r)] = 0.5f + float(r);
                attention::weighted_values(p16.data(), rows, values.data(), n_kv, d, inverse.data(), out.data(), 2 * d);

                // The distance of `got` from Σ_n a(n)·b(n) over the rounded operands, relative to Σ |a·b|.
                const auto distance = [](double got, int64_t count, auto a, auto b) {
                    double sum = 0, magnitude = 0;
                    for (int64_t n = 0; n < count; ++n) {
                        const double term = double(rounded(a(n))) * rounded(b(n));
                        sum += term;
                        magnitude += std::fabs(term);
                    }
                    return std::fabs(got - sum) / (magnitude + 1e-30);
                };
                double worst_score = 0, worst_value = 0;
                for (int64_t r = 0; r < rows; ++r) {
                    for (int64_t j = 0; j < n_kv; ++j)
                        worst_score =
                            std::max(worst_score, distance(
                                                      s[size_t(r * s_stride + j)], d,
                                                      [&](int64_t i) { return q[size_t(r * d + i)]; },
                                                      [&](int64_t i) { return k[size_t(j * key_stride + i)]; }));
                    for (int64_t i = 0; i < d; ++i)
                        worst_value =
                            std::max(worst_value, distance(
                                                      out[size_t(r * 2 * d + i)] / inverse[size_t(r)], n_kv,
                                                      [&](int64_t j) { return p[size_t(r * n_kv + j)]; },
                                                      [&](int64_t j) { return v[size_t(j * key_stride + i)]; }));
                    for (int64_t i = d; i < 2 * d; ++i)
                        ASSERT_EQ(out[size_t(r * 2 * d + i)], -7.0f) << what << ": wrote past its row";
                }
                // f32 sums of exact products: relative to the sum of magnitudes, a few f32 roundings.
                EXPECT_LT(worst_score, 1e-5) << what << ": scores";
                EXPECT_LT(worst_value, 1e-5) << what << ": weighted values";

                // Each row alone: the same bits as in the block.
                for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 3)) {
                    std::vector<float> alone(static_cast<size_t>(s_stride));
                    attention::scores(q16.data() + r * d, 1, d, keys.data(), n_kv, alone.data());
                    for (int64_t j = 0; j < n_kv; ++j)
                        ASSERT_EQ(alone[size_t(j)], s[size_t(r * s_stride + j)]) << what << ": row " << r << " alone";
                    std::vector<float> alone_out(static_cast<size_t>(d));
                    attention::weighted_values(p16.data() + r * p_stride, 1, values.data(), n_kv, d,
                                               &inverse[size_t(r)], alone_out.data(), d);
                    for (int64_t i = 0; i < d; ++i)
                        ASSERT_EQ(alone_out[size_t(i)], out[size_t(r * 2 * d + i)])
                            << what << ": row " << r << " alone";
                }
            }
}

TEST(Bf16Attention, TakesHeadWidthsItHasRegistersFor) {
    EXPECT_TRUE(attention::takes(64));
    EXPECT_TRUE(attention::takes(16));
    EXPECT_FALSE(attention::takes(8));
    EXPECT_FALSE(attention::takes(80));
    EXPECT_FALSE(attention::takes(128));
}

} // namespace
} // namespace chatterbox
