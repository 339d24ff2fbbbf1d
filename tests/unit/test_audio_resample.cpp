// The two resamplers against the golden arrays of the reference pipeline (librosa soxr_hq and
// torchaudio Resample of the same 24 kHz reference), plus lengths, identities, accuracy on pure
// tones and bad arguments.

#include "audio/resample.h"
#include "core/error.h"
#include "core/npy.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace chatterbox;
using namespace chatterbox::audio;
using namespace chatterbox::test;

namespace {

constexpr double pi = 3.14159265358979323846;

std::vector<float> tone(size_t n, int sample_rate, double hz) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = float(0.5 * std::sin(2.0 * pi * hz * double(i) / sample_rate));
    return x;
}

// Largest deviation from the ideal resampled tone away from the edges (filter warm-up).
double tone_error(const std::vector<float> &y, int sample_rate, double hz, size_t margin) {
    double worst = 0;
    for (size_t i = margin; i + margin < y.size(); ++i)
        worst = std::max(worst, std::fabs(double(y[i]) - 0.5 * std::sin(2.0 * pi * hz * double(i) / sample_rate)));
    return worst;
}

} // namespace

TEST(Resample, SoxrHqMatchesLibrosa) {
    const std::vector<float> ref24 = read_npy(golden_path("ref_wav_24k.npy")).f32();
    expect_matches_golden(resample_soxr_hq(ref24, 24000, 16000), "ref_wav_16k_librosa");
}

TEST(Resample, TorchaudioMatchesResampleTransform) {
    const std::vector<float> ref24 = read_npy(golden_path("ref_wav_24k.npy")).f32();
    expect_matches_golden(resample_torchaudio(ref24, 24000, 16000), "ref_wav_16k_torchaudio");
}

TEST(Resample, OutputLengthIsCeilOfScaledInput) {
    const std::vector<std::pair<int, int>> rates = {{24000, 16000}, {16000, 24000}, {44100, 16000}, {8000, 16000}};
    for (const auto &[in, out] : rates) {
        for (size_t n : {0, 1, 2, 3, 7, 100, 1001, 4410}) {
            SCOPED_TRACE(std::to_string(in) + "->" + std::to_string(out) + " n=" + std::to_string(n));
            const std::vector<float> x = tone(n, in, 300);
            const size_t expected = size_t(std::ceil(double(n) * out / in));
            EXPECT_EQ(resample_soxr_hq(x, in, out).size(), expected);
            EXPECT_EQ(resample_torchaudio(x, in, out).size(), expected);
        }
    }
}

TEST(Resample, EqualRatesReturnTheInput) {
    const std::vector<float> x = tone(1000, 16000, 440);
    EXPECT_EQ(resample_soxr_hq(x, 16000, 16000), x);
    EXPECT_EQ(resample_torchaudio(x, 16000, 16000), x);
}

TEST(Resample, PureTonesSurviveDownAndUpsampling) {
    const std::vector<std::pair<int, int>> rates = {{24000, 16000}, {16000, 24000}, {44100, 16000}, {48000, 24000}};
    for (const auto &[in, out] : rates) {
        SCOPED_TRACE(std::to_string(in) + "->" + std::to_string(out));
        const std::vector<float> x = tone(size_t(in), in, 440.0);
        const size_t margin = size_t(out / 10);
        EXPECT_LT(tone_error(resample_soxr_hq(x, in, out), out, 440.0, margin), 1e-4);
        EXPECT_LT(tone_error(resample_torchaudio(x, in, out), out, 440.0, margin), 1e-3);
    }
}

TEST(Resample, TonesAboveTheNewNyquistAreRemoved) {
    const std::vector<float> x = tone(24000, 24000, 10000.0); // above 8 kHz, must not alias into the output
    for (const auto &y : {resample_soxr_hq(x, 24000, 16000), resample_torchaudio(x, 24000, 16000)}) {
        double energy = 0;
        for (size_t i = 1600; i + 1600 < y.size(); ++i) energy += double(y[i]) * y[i];
        EXPECT_LT(std::sqrt(energy / double(y.size() - 3200)), 0.5 * 0.02);
    }
}

TEST(Resample, RejectsBadArguments) {
    EXPECT_THROW(resample_soxr_hq({0.1f}, 0, 16000), Error);
    EXPECT_THROW(resample_torchaudio({0.1f}, 24000, -1), Error);
    EXPECT_THROW(resample_soxr_hq({0.1f, std::nanf("")}, 24000, 16000), Error);
    EXPECT_THROW(resample_torchaudio({INFINITY}, 24000, 16000), Error);
}
