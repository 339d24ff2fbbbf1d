// How each variant prepares a voice reference before its models see it: Turbo's -27 LUFS step on
// the golden Turbo voice (official output), its "longer than 5 s" rule, English's plain resampling.

#include "core/error.h"
#include "core/npy.h"
#include "models/chatterbox/variant_spec.h"
#include "models/chatterbox/voice.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>

namespace chatterbox {
namespace {

audio::AudioBuffer tone(double seconds, int rate = 24000) {
    audio::AudioBuffer a;
    a.sample_rate = rate;
    a.samples.resize(size_t(seconds * rate));
    for (size_t i = 0; i < a.samples.size(); ++i) a.samples[i] = float(0.3 * std::sin(0.05 * double(i)));
    return a;
}

TEST(VoiceReference, TurboNormalisesTheGoldenVoiceToMinus27Lufs) {
    const audio::AudioBuffer voice = audio::read_audio(test::data_path("turbo/ref_voice.wav"));
    const std::vector<float> prepared = prepare_reference(voice, variant_spec(Variant::turbo).reference);
    const std::vector<float> expected = read_npy(test::data_path("turbo/ref_wav_24k_loudnorm.npy")).f32();
    ASSERT_EQ(prepared.size(), expected.size());
    double worst = 0;
    for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, double(std::abs(prepared[i] - expected[i])));
    EXPECT_LE(worst, 1e-5); // index.json tolerance of ref_wav_24k_loudnorm

    // English keeps the level: a 24 kHz file passes unchanged.
    EXPECT_EQ(prepare_reference(voice, variant_spec(Variant::english).reference), voice.samples);
}

TEST(VoiceReference, TurboNeedsMoreThanFiveSeconds) {
    const ReferencePolicy turbo = variant_spec(Variant::turbo).reference;
    test::expect_error([&] { prepare_reference(tone(4.0), turbo); }, "this model needs more than 5 s of speech");
    test::expect_error([&] { prepare_reference(tone(5.0), turbo); }, "more than 5 s");
    EXPECT_EQ(prepare_reference(tone(5.5), turbo).size(), size_t(5.5 * 24000));
    EXPECT_EQ(prepare_reference(tone(1.0, 16000), variant_spec(Variant::english).reference).size(), 24000u);
    test::expect_error([&] { prepare_reference(tone(0.05), variant_spec(Variant::english).reference); }, "at least");
}

} // namespace
} // namespace chatterbox
