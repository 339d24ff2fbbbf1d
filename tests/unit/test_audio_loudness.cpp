// BS.1770 loudness as pyloudnorm measures it and Turbo's -27 LUFS normalisation of the voice
// reference: the golden Turbo voice (official norm_loudness output), tones of known loudness,
// gating, and the cases the reference skips.

#include "audio/audio_file.h"
#include "audio/loudness.h"
#include "core/error.h"
#include "core/npy.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace chatterbox::audio {
namespace {

std::vector<float> sine(double frequency, double amplitude, double seconds, int rate) {
    std::vector<float> x(size_t(seconds * rate));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(amplitude * std::sin(2 * M_PI * frequency * double(i) / rate));
    return x;
}

TEST(AudioLoudness, MatchesTheGoldenTurboVoice) {
    const AudioBuffer voice = read_audio(test::data_path("turbo/ref_voice.wav"));
    ASSERT_EQ(voice.sample_rate, 24000);
    // index.json: pyloudnorm measured -20.379983 LUFS.
    EXPECT_NEAR(integrated_loudness(voice.samples, 24000), -20.379983, 1e-5);
    const std::vector<float> expected = read_npy(test::data_path("turbo/ref_wav_24k_loudnorm.npy")).f32();
    const std::vector<float> normalised = normalize_loudness(voice.samples, 24000, -27.0);
    ASSERT_EQ(normalised.size(), expected.size());
    double worst = 0;
    for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, double(std::abs(normalised[i] - expected[i])));
    EXPECT_LE(worst, 1e-5);
    EXPECT_NEAR(integrated_loudness(normalised, 24000), -27.0, 1e-3);
}

TEST(AudioLoudness, AFullScaleKiloHertzToneIsAboutMinusThree) {
    // BS.1770: a 0 dBFS 1 kHz sine reads -3.01 LUFS (K-weighting is ~0 dB there) at 48 kHz, the
    // rate the standard's coefficients are given for; the cookbook filters drift a little at lower rates.
    EXPECT_NEAR(integrated_loudness(sine(1000, 1.0, 3.0, 48000), 48000), -3.01, 0.05);
    for (int rate : {24000, 16000}) {
        EXPECT_NEAR(integrated_loudness(sine(1000, 1.0, 3.0, rate), rate), -3.01, 0.1) << rate;
    }
    // -20 dB of amplitude is -20 LU.
    EXPECT_NEAR(integrated_loudness(sine(1000, 0.1, 3.0, 48000), 48000) -
                    integrated_loudness(sine(1000, 1.0, 3.0, 48000), 48000),
                -20.0, 1e-6);
}

TEST(AudioLoudness, QuietPartsBelowTheRelativeGateDoNotCount) {
    std::vector<float> loud = sine(1000, 0.5, 4.0, 24000);
    std::vector<float> with_quiet = loud;
    const std::vector<float> quiet = sine(1000, 0.005, 4.0, 24000); // -40 LU: below the -10 LU gate
    with_quiet.insert(with_quiet.end(), quiet.begin(), quiet.end());
    // Ungated, half the time at -40 LU would read 3 dB lower; only the blocks across the step count.
    EXPECT_NEAR(integrated_loudness(with_quiet, 24000), integrated_loudness(loud, 24000), 0.2);
}

TEST(AudioLoudness, SilenceAndShortSignalsAreLeftAsTheReferenceLeavesThem) {
    const std::vector<float> silence(24000 * 2, 0.0f);
    EXPECT_TRUE(std::isinf(integrated_loudness(silence, 24000)));
    EXPECT_EQ(normalize_loudness(silence, 24000, -27.0), silence);
    const std::vector<float> short_tone = sine(1000, 0.5, 0.3, 24000);
    EXPECT_EQ(normalize_loudness(short_tone, 24000, -27.0), short_tone);
    test::expect_error([&] { integrated_loudness(short_tone, 24000); }, "shorter than one 400 ms block");
    test::expect_error([&] { integrated_loudness(short_tone, 0); }, "sample rate 0");
}

} // namespace
} // namespace chatterbox::audio
