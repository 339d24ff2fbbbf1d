// The softmax exponentiation of the blocked attention (kernels/exponentiate.h), every variant this
// CPU runs, against exp in double: lengths that end inside a vector or are shorter than one, a
// row whose maximum sits in the tail, scores far below the maximum (exp underflows to 0); the sum
// within 1e-6, each element within 1e-6 plus what forming its argument in f32 costs; and the
// numerators rounded to bf16 for the bf16 attention.

#include "kernels/exponentiate.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace chatterbox {
namespace {

using Variant = float (*)(float *, int64_t, float);

struct Named {
    const char *name;
    Variant variant;
    bool runs;
};

std::vector<Named> variants() {
    std::vector<Named> all{{"scalar", kernels::exponentiate_scalar, true}, {"dispatch", kernels::exponentiate, true}};
#if defined(__x86_64__)
    all.push_back({"avx2", kernels::exponentiate_avx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")});
    all.push_back({"avx512", kernels::exponentiate_avx512, __builtin_cpu_supports("avx512f") != 0});
#endif
    return all;
}

void check(const std::vector<float> &scores, float scale, const std::string &what) {
    double top = -INFINITY;
    for (float s : scores) top = std::max(top, double(s));
    std::vector<double> expected(scores.size());
    double expected_sum = 0;
    for (size_t i = 0; i < scores.size(); ++i) expected_sum += expected[i] = std::exp(scale * (scores[i] - top));
    for (const Named &v : variants()) {
        if (!v.runs) continue;
        std::vector<float> row = scores;
        const float sum = v.variant(row.data(), int64_t(row.size()), scale);
        EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum) << what << ", " << v.name;
        // The argument scale·(s − max) is formed in f32: its rounding (a few ulp of |argument|) moves
        // exp by as much relatively.
        for (size_t i = 0; i < row.size(); ++i) {
            const double argument = std::abs(std::log(expected[i] > 0 ? expected[i] : 1e-300));
            const double bound = expected[i] * (1e-6 + 4 * argument * FLT_EPSILON) + 1e-37;
            ASSERT_NEAR(row[i], expected[i], bound) << what << ", " << v.name << ", element " << i;
        }
    }
}

TEST(Exponentiate, EveryVariantMatchesExpInDouble) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> score(-30.0f, 30.0f);
    for (int64_t n : {1, 3, 8, 15, 16, 17, 33, 131, 1000}) {
        std::vector<float> row(static_cast<size_t>(n));
        for (float &s : row) s = score(rng);
        check(row, 0.125f, "n = " + std::to_string(n));
        row.back() = 100.0f; // the maximum in the tail
        check(row, 1.0f, "n = " + std::to_string(n) + ", maximum last, scale 1 (most underflow)");
    }
}

// The bf16 numerators: each the exact value's bf16 rounding or a neighbour of it (the coarser
// polynomial may land across a rounding boundary), within 2^-8 relatively; the f32 sum within 1e-5.
TEST(Exponentiate, Bf16NumeratorsAreTheRoundedValues) {
    std::vector<std::pair<const char *, float (*)(float *, int64_t, float, uint16_t *)>> all{
        {"scalar", kernels::exponentiate_to_bf16_scalar}, {"dispatch", kernels::exponentiate_to_bf16}};
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
        all.push_back({"avx512", kernels::exponentiate_to_bf16_avx512});
#endif
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> score(-40.0f, 40.0f);
    for (int64_t n : {1, 5, 16, 17, 100, 1000}) {
        std::vector<float> scores(static_cast<size_t>(n));
        for (float &s : scores) s = score(rng);
        double top = -INFINITY, expected_sum = 0;
        for (float s : scores) top = std::max(top, double(s));
        for (const auto &[name, variant] : all) {
            std::vector<float> row = scores;
            std::vector<uint16_t> out(row.size(), 0xFFFF);
            const float sum = variant(row.data(), n, 0.25f, out.data());
            expected_sum = 0;
            for (size_t i = 0; i < scores.size(); ++i) {
                const double expected = std::exp(0.25 * (scores[i] - top));
                expected_sum += expected;
                const uint32_t bits = uint32_t(out[i]) << 16;
                float value;
                std::memcpy(&value, &bits, sizeof value);
                ASSERT_NEAR(value, expected, expected / 256 + 1e-37) << name << ", n = " << n << ", element " << i;
            }
            EXPECT_NEAR(sum, expected_sum, 1e-5 * expected_sum) << name << ", n = " << n;
        }
    }
}

TEST(Exponentiate, EqualScoresShareTheMassEvenly) {
    for (const Named &v : variants()) {
        if (!v.runs) continue;
        std::vector<float> row(21, -3.5f);
        EXPECT_FLOAT_EQ(v.variant(row.data(), 21, 0.3f), 21.0f) << v.name;
        for (float e : row) EXPECT_FLOAT_EQ(e, 1.0f) << v.name;
    }
}

} // namespace
} // namespace chatterbox
