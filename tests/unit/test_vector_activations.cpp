// The vector activations' instruction sets (kernels/vector_activations_isa.h) give the same bits:
// every element of GELU (erf, tanh), Mish and Snake from the AVX-512 set equals the AVX2 set's, over
// random values of every magnitude, the special values and lengths that end inside a vector (the
// CPU must have both sets; elsewhere the test is skipped). Agreement with the naive formulas is
// test_nn_layers' (NnActivations).

#if defined(__x86_64__)
#include "kernels/vector_activations_isa.h"
#endif

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace chatterbox {
namespace {

#if defined(__x86_64__)
using kernels::activations::Isa;

bool both_sets_run() {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx512f");
}

// Values spread over every exponent from 2^-30 to 2^8 and both signs, the activations' thresholds
// (Mish's 20) and the special values.
std::vector<float> inputs(size_t n) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> mantissa(1.0f, 2.0f), exponent(-30.0f, 8.0f);
    std::vector<float> x(n);
    for (float &v : x) v = (rng() & 1 ? -1.0f : 1.0f) * mantissa(rng) * std::exp2(std::floor(exponent(rng)));
    const float special[] = {0.0f,
                             -0.0f,
                             20.0f,
                             std::nextafter(20.0f, 30.0f),
                             -20.0f,
                             88.0f,
                             -88.0f,
                             FLT_MIN,
                             -FLT_MAX,
                             FLT_MAX,
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN()};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; ++i) x[i * 97 % n] = special[i];
    return x;
}

uint32_t bits(float v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

template <class Run> void expect_same_bits(const std::string &name, Run run) {
    const std::vector<float> x = inputs(1 << 20);
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(8), int64_t(15), int64_t(17), int64_t(1000), int64_t(x.size())}) {
        std::vector<float> wide(size_t(n), -1.0f), narrow(size_t(n), -1.0f);
        run(kernels::activations::avx512_isa(), x.data(), wide.data(), n);
        run(kernels::activations::avx2_isa(), x.data(), narrow.data(), n);
        int64_t differ = 0, first = -1;
        for (int64_t i = 0; i < n; ++i)
            if (bits(wide[size_t(i)]) != bits(narrow[size_t(i)]) &&
                !(std::isnan(wide[size_t(i)]) && std::isnan(narrow[size_t(i)])))
                if (differ++ == 0) first = i;
        EXPECT_EQ(differ, 0) << name << ", length " << n << ": first at " << first << " (x = " << x[size_t(first)]
                             << "): AVX-512 " << wide[size_t(first)] << ", AVX2 " << narrow[size_t(first)];
    }
}

TEST(VectorActivations, AvxSetsGiveTheSameBits) {
    if (!both_sets_run()) GTEST_SKIP() << "the CPU lacks AVX2 with FMA or AVX-512F";
    for (auto [name, f] : {std::pair{"gelu_erf", &Isa::gelu_erf}, std::pair{"gelu_tanh", &Isa::gelu_tanh},
                           std::pair{"mish", &Isa::mish}})
        expect_same_bits(name, [f = f](const Isa &isa, const float *x, float *y, int64_t n) { (isa.*f)(x, y, n); });
    for (float alpha : {0.5f, 1.0f, 3.7f})
        expect_same_bits("snake, alpha " + std::to_string(alpha),
                         [alpha](const Isa &isa, const float *x, float *y, int64_t n) {
                             isa.snake(x, y, n, alpha, 1.0f / (alpha + 1e-9f));
                         });
}

TEST(VectorActivations, InPlaceEqualsOutOfPlace) {
    if (!both_sets_run()) GTEST_SKIP() << "the CPU lacks AVX2 with FMA or AVX-512F";
    const std::vector<float> x = inputs(4099);
    for (const Isa *isa : {&kernels::activations::avx2_isa(), &kernels::activations::avx512_isa()}) {
        std::vector<float> out(x.size()), in_place = x;
        isa->gelu_tanh(x.data(), out.data(), int64_t(x.size()));
        isa->gelu_tanh(in_place.data(), in_place.data(), int64_t(x.size()));
        EXPECT_EQ(std::memcmp(out.data(), in_place.data(), x.size() * sizeof(float)), 0);
    }
}
#else
TEST(VectorActivations, AvxSetsGiveTheSameBits) { GTEST_SKIP() << "x86-64 only"; }
#endif

} // namespace
} // namespace chatterbox
