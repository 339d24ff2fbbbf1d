// TorchGenerator against draws recorded from torch (tests/data/torch_rng, a copy of
// golden/torch_rng: torch 1.13 without MKL on x86-64): raw words, uniforms, normals of every
// layout (n < 16, a multiple of 16, a tail), multinomial rows, bit for bit; and the exponential row
// the torch 2.6.0 wheel prints.

#include "core/npy.h"
#include "core/torch_generator.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

using namespace chatterbox;

namespace {

nlohmann::json torch_rng_index() {
    std::ifstream in(test::data_path("torch_rng/index.json"));
    return nlohmann::json::parse(in);
}

NpyArray torch_rng_array(const std::string &name) { return read_npy(test::data_path("torch_rng/" + name + ".npy")); }

size_t numel(const nlohmann::json &shape) {
    size_t n = 1;
    for (const auto &d : shape) n *= d.get<size_t>();
    return n;
}

void expect_bits_equal(const std::vector<float> &got, const std::vector<float> &want, const std::string &what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    size_t differing = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && differing++ == 0) first = i;
    EXPECT_EQ(differing, 0u) << what << ": first at " << first << ": " << got[first] << " vs " << want[first];
}

} // namespace

// The raw stream is MT19937's from the seed's low 32 bits (the reference's first outputs for 5489,
// and a 64-bit seed folding to the same stream).
TEST(TorchGenerator, StreamIsMt19937OfTheLow32Bits) {
    TorchGenerator a(5489);
    EXPECT_EQ(a.random(), 3499211612u);
    EXPECT_EQ(a.random(), 581869302u);
    TorchGenerator b(5489 + (uint64_t(7) << 32));
    EXPECT_EQ(b.random(), 3499211612u);
    TorchGenerator c(5489);
    const uint64_t high = 3499211612u, low = 581869302u;
    EXPECT_EQ(c.random64(), (high << 32) | low);
}

// The block generator against the standard library's MT19937 over many twists.
TEST(TorchGenerator, BlocksAreTheStandardMt19937Stream) {
    for (uint64_t seed : {0ull, 1ull, 0xffffffffull, 123456789012345ull}) {
        TorchGenerator g(seed);
        std::mt19937 reference{uint32_t(seed)};
        for (int i = 0; i < 10 * 624 + 7; ++i) ASSERT_EQ(g.random(), reference()) << "seed " << seed << " word " << i;
    }
}

TEST(TorchGenerator, UniformsUseTheTopBitsTorchKeeps) {
    TorchGenerator g(1), words(1);
    EXPECT_EQ(g.uniform_float(), float(words.random() & 0xffffff) * 0x1.0p-24f);
    EXPECT_EQ(g.uniform_double(), double(words.random64() & ((1ull << 53) - 1)) * 0x1.0p-53);
}

// Every recorded draw, reproduced from its seed and shape alone.
TEST(TorchGenerator, GoldenDrawsBitExact) {
    const nlohmann::json index = torch_rng_index();
    ASSERT_FALSE(index["draws"].empty());
    for (const auto &draw : index["draws"]) {
        const std::string name = draw["name"], kind = draw["kind"];
        const size_t n = numel(draw["shape"]);
        TorchGenerator g(draw["seed"].get<uint64_t>());
        const NpyArray want = torch_rng_array(name);
        if (kind == "rand_f64") {
            std::vector<double> got(n);
            g.rand(got.data(), n);
            ASSERT_EQ(want.descr, "<f8");
            EXPECT_EQ(std::memcmp(got.data(), want.data.data(), n * sizeof(double)), 0) << name;
            continue;
        }
        std::vector<float> got;
        if (kind == "rand")
            got = g.rand(n);
        else if (kind == "randn")
            got = g.randn(n);
        else if (kind == "rand_then_randn") {
            got = g.rand(size_t(draw["shape"][1].get<int>())); // torch.rand(1, harmonics)
            const std::vector<float> normals = g.randn(n);
            got.insert(got.end(), normals.begin(), normals.end());
        } else
            FAIL() << "unknown draw kind " << kind;
        expect_bits_equal(got, want.f32(), name);
    }
}

TEST(TorchGenerator, GoldenMultinomialTokens) {
    const nlohmann::json index = torch_rng_index();
    ASSERT_FALSE(index["multinomial"].empty());
    for (const auto &c : index["multinomial"]) {
        const std::string name = c["name"];
        const NpyArray probs = torch_rng_array(name + "_probs");
        const std::vector<int64_t> want = torch_rng_array(name + "_tokens").i64();
        const size_t vocab = c["vocab"].get<size_t>(), steps = c["steps"].get<size_t>();
        ASSERT_EQ(size_t(probs.numel()), vocab * steps) << name;
        const std::vector<float> rows = probs.f32();
        TorchGenerator g(c["seed"].get<uint64_t>());
        for (size_t s = 0; s < steps; ++s)
            EXPECT_EQ(g.multinomial_one(rows.data() + s * vocab, vocab), want[s]) << name << " step " << s;
    }
}

// The tail block of randn overlaps the previous block: 16 fresh uniforms replace the last 16.
TEST(TorchGenerator, RandnTailRedrawsTheLast16) {
    TorchGenerator g(3), uniforms(3);
    const std::vector<float> normals = g.randn(20);
    uniforms.rand(20 + 16);
    // The first 4 values come from the first block's Box-Muller on the original uniforms.
    TorchGenerator first_block(3);
    const std::vector<float> block = first_block.randn(16);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(normals[size_t(i)], block[size_t(i)]);
    // Both generators end at the same place: 20 + 16 words.
    EXPECT_EQ(g.random(), uniforms.random());
}

// Small draws go through normal_distribution<double>, whose second value is cached: an odd count
// leaves one for the next small draw, and manual_seed clears it.
TEST(TorchGenerator, SmallRandnUsesTheCachedSecondValue) {
    TorchGenerator g(11);
    const std::vector<float> three = g.randn(3);
    const std::vector<float> one = g.randn(1);
    TorchGenerator h(11);
    const std::vector<float> four = h.randn(4);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(three[i], four[i]);
    EXPECT_EQ(one[0], four[3]);
    g.manual_seed(11);
    EXPECT_EQ(g.randn(1)[0], four[0]);
}

// Both Box-Muller kernels are normals of the same uniforms: within float rounding of each other.
TEST(TorchGenerator, ScalarAndAvx2KernelsAgreeClosely) {
    TorchGenerator a(5, NormalKernel::avx2), b(5, NormalKernel::scalar);
    const std::vector<float> x = a.randn(4096), y = b.randn(4096);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-5f * (1 + std::fabs(y[i]))) << i;
}

TEST(TorchGenerator, MultinomialFollowsTheProbabilities) {
    const std::vector<float> probs{0.1f, 0.0f, 0.6f, 0.3f};
    TorchGenerator g(2024);
    int counts[4] = {0, 0, 0, 0};
    const int draws = 20000;
    for (int i = 0; i < draws; ++i) ++counts[g.multinomial_one(probs.data(), probs.size())];
    EXPECT_EQ(counts[1], 0);
    for (int k : {0, 2, 3}) EXPECT_NEAR(double(counts[k]) / draws, probs[size_t(k)], 0.015) << k;
}

// The torch 2.6.0 wheel (built with MKL, the version chatterbox pins) draws exponential_ on ATen's
// own path: its numbers after manual_seed(42) and rand(5), as printed in pytorch#150538.
TEST(TorchGenerator, ExponentialIsTheTorch26WheelsAfterRand) {
    TorchGenerator generator(42);
    std::vector<float> uniforms(5), row(5);
    generator.rand(uniforms.data(), uniforms.size());
    generator.exponential(row.data(), row.size());
    const std::vector<float> printed_rand{0.8823f, 0.9150f, 0.3829f, 0.9593f, 0.3904f};
    const std::vector<float> printed_exponential{1.6459f, 0.4294f, 0.0677f, 1.3809f, 0.7803f};
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_NEAR(uniforms[i], printed_rand[i], 5e-5f) << i;
        EXPECT_NEAR(row[i], printed_exponential[i], 5e-5f) << i;
    }
}
