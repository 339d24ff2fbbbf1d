// HiFT host-side pieces against closed forms: the NSF source (voiced sines, unvoiced noise, the
// fundamental's phase), the seeded noise draw, the source STFT against a direct DFT, the
// magnitude clip and clamp of the iSTFT head, and trim_fade.

#include "audio/stft.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/torch_generator.h"
#include "models/chatterbox/hift/sine_source.h"
#include "models/chatterbox/hift/spectral.h"
#include "models/chatterbox/hift/vocoder.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>

using namespace chatterbox;
using namespace chatterbox::hift;

namespace {

constexpr double kPi = 3.14159265358979323846;
const HiftHParams kHp = HiftHParams::standard();

SourceMerge one_harmonic(int h, float weight = 1.0f) {
    SourceMerge m;
    m.weight.assign(size_t(kHp.harmonics), 0.0f);
    m.weight[size_t(h)] = weight;
    return m;
}

SourceNoise zero_noise(int64_t frames, float phase = 0.0f) {
    SourceNoise n;
    n.phases.assign(size_t(kHp.harmonics), phase);
    n.noise.assign(size_t(kHp.harmonics * frames * kHp.samples_per_frame()), 0.0f);
    return n;
}

TEST(HiftSource, VoicedHarmonicIsASineWithItsPhase) {
    const std::vector<float> f0 = {100.0f, 100.0f};
    const float phi = 0.7f;
    for (int h : {0, 2}) {
        const std::vector<float> s = sine_source(f0, zero_noise(2, phi), one_harmonic(h), kHp);
        ASSERT_EQ(s.size(), size_t(960));
        // The fundamental's random phase is forced to 0, as SineGen does.
        const double phase = h == 0 ? 0.0 : phi;
        for (size_t i = 0; i < s.size(); i += 37) {
            const double theta = 2 * kPi * 100.0 * (h + 1) * double(i + 1) / 24000.0;
            EXPECT_NEAR(s[i], std::tanh(0.1 * std::sin(theta + phase)), 2e-6) << "harmonic " << h << " sample " << i;
        }
    }
}

TEST(HiftSource, NoiseAmplitudeFollowsVoicing) {
    // Frame 0 unvoiced (5 Hz <= 10 Hz): sine silenced, noise 0.1/3; frame 1 voiced: noise 0.003.
    const std::vector<float> f0 = {5.0f, 200.0f};
    SourceNoise noise = zero_noise(2);
    std::fill(noise.noise.begin(), noise.noise.end(), 1.0f);
    SourceMerge merge = one_harmonic(1, 2.0f);
    merge.bias = 0.25f;
    const std::vector<float> s = sine_source(f0, noise, merge, kHp);
    EXPECT_NEAR(s[10], std::tanh(2.0 * 0.1 / 3 + 0.25), 1e-6);
    // Harmonic 2 (2 f0): frame 0's phase increments accumulate before frame 1's.
    const int i = 480 + 100;
    const double cumulative = 480 * 5.0 * 2 / 24000.0 + (100 + 1) * 200.0 * 2 / 24000.0;
    EXPECT_NEAR(s[size_t(i)], std::tanh(2.0 * (0.1 * std::sin(2 * kPi * cumulative) + 0.003) + 0.25), 2e-6);
}

TEST(HiftSource, RejectsMismatchedNoise) {
    SourceNoise noise = zero_noise(2);
    EXPECT_THROW(sine_source({100.0f, 100.0f, 100.0f}, noise, one_harmonic(0), kHp), Error);
    noise.phases.resize(3);
    EXPECT_THROW(sine_source({100.0f, 100.0f}, noise, one_harmonic(0), kHp), Error);
}

TEST(HiftSource, SeededDrawIsReproducible) {
    TorchGenerator a(42), b(42), c(43);
    const SourceNoise x = draw_source_noise(a, 9, 20000), y = draw_source_noise(b, 9, 20000),
                      z = draw_source_noise(c, 9, 20000);
    EXPECT_EQ(x.phases, y.phases);
    EXPECT_EQ(x.noise, y.noise);
    EXPECT_NE(x.noise, z.noise);
    for (float p : x.phases) EXPECT_TRUE(p >= -kPi && p <= kPi);
    double sum = 0, sum2 = 0;
    for (float v : x.noise) sum += v, sum2 += double(v) * v;
    const double n = double(x.noise.size()), mean = sum / n;
    EXPECT_NEAR(mean, 0.0, 0.01);
    EXPECT_NEAR(std::sqrt(sum2 / n - mean * mean), 1.0, 0.01);
}

// SineGen's draws in torch's order (tests/data/torch_rng draw_6: torch.rand(1, 9) then
// torch.randn(1, 9, 480) after manual_seed(23)), the phases scaled to [-pi, pi) in float.
TEST(HiftSource, DrawsWhatTorchDrawsForOneFrame) {
    const std::vector<float> recorded = read_npy(test::data_path("torch_rng/draw_6_rand_then_randn.npy")).f32();
    ASSERT_EQ(recorded.size(), size_t(9 + 9 * 480));
    TorchGenerator rng(23);
    const SourceNoise drawn = draw_source_noise(rng, 9, 480);
    const float low = float(-kPi), high = float(kPi);
    for (size_t h = 0; h < 9; ++h) EXPECT_EQ(drawn.phases[h], low + recorded[h] * (high - low)) << h;
    EXPECT_TRUE(std::equal(drawn.noise.begin(), drawn.noise.end(), recorded.begin() + 9));
    // ...then the noise branch's 480 normals, which inference drops.
    TorchGenerator reference(23);
    reference.rand(9);
    reference.randn(9 * 480);
    reference.randn(480);
    EXPECT_EQ(rng.random(), reference.random());
}

TEST(HiftSpectral, SourceStftMatchesADirectDft) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> x(480);
    for (float &v : x) v = u(rng);
    const std::vector<float> spec = source_stft(x, kHp);
    const int64_t frames = 121;
    ASSERT_EQ(spec.size(), size_t(18 * frames));
    for (int64_t f : {2, 60, 118}) {
        for (int k = 0; k < 9; ++k) {
            std::complex<double> sum = 0;
            for (int n = 0; n < 16; ++n) {
                const double w = 0.5 - 0.5 * std::cos(2 * kPi * n / 16);
                sum += double(x[size_t(4 * f + n - 8)]) * w * std::polar(1.0, -2 * kPi * k * n / 16);
            }
            EXPECT_NEAR(spec[size_t(k * frames + f)], sum.real(), 1e-5) << f << "," << k;
            EXPECT_NEAR(spec[size_t((9 + k) * frames + f)], sum.imag(), 1e-5) << f << "," << k;
        }
    }
}

TEST(HiftSpectral, HeadClipsMagnitudeAndClampsTheWave) {
    const int64_t frames = 41;
    std::vector<float> heads(size_t(18 * frames), 0.0f);
    for (int64_t i = 0; i < 9 * frames; ++i) heads[size_t(i)] = 1000.0f;        // exp overflows: clipped at 100
    for (int64_t i = 9 * frames; i < 18 * frames; ++i) heads[size_t(i)] = 1.5f; // phase sin(1.5)
    const std::vector<float> wave = heads_to_wave(heads, frames, kHp);
    ASSERT_EQ(wave.size(), size_t(4 * (frames - 1)));
    for (float v : wave) {
        EXPECT_TRUE(std::isfinite(v));
        EXPECT_LE(std::fabs(v), 0.99f);
    }
    // Magnitude 100 in every bin gives samples of order 10: the clamp is reached.
    double peak = 0;
    for (float v : wave) peak = std::max(peak, double(std::fabs(v)));
    EXPECT_FLOAT_EQ(float(peak), 0.99f);
    EXPECT_THROW(heads_to_wave(heads, frames + 1, kHp), Error);
}

TEST(HiftTrimFade, ZeroThenRaisedCosine) {
    std::vector<float> wave(2000, 1.0f);
    apply_trim_fade(wave, 480);
    for (int i = 0; i < 481; ++i) EXPECT_EQ(wave[size_t(i)], 0.0f) << i;
    for (int i = 481; i < 960; ++i) {
        const double x = kPi - kPi * (i - 480) / 479.0;
        EXPECT_NEAR(wave[size_t(i)], (std::cos(x) + 1) / 2, 1e-6) << i;
        EXPECT_GE(wave[size_t(i)], wave[size_t(i - 1)]);
    }
    EXPECT_FLOAT_EQ(wave[959], 1.0f);
    for (int i = 960; i < 2000; ++i) EXPECT_EQ(wave[size_t(i)], 1.0f);
    std::vector<float> shorter(700, 1.0f); // shorter than 40 ms: no out-of-range write
    apply_trim_fade(shorter, 480);
    EXPECT_EQ(shorter[479], 0.0f);
    EXPECT_LT(shorter[699], 1.0f);
}

} // namespace
