// needs: nano-synthetic-weights
// Nano at full size (there is no Nano golden set): the official folder of the synthetic Nano
// weights (GPT-2 small T3, the mean-flow S3Gen, Turbo's tokenizer and conds.pt) loads with the
// published hyper-parameters and speaks end to end with its built-in voice and a cloned one; a
// Turbo voice serves Nano. (Determinism, streaming and voice files: e2e.test_turbo_model, tiny Nano.)

#include "models/chatterbox/session.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>

namespace chatterbox {
namespace {

SynthesisOptions short_request() {
    SynthesisOptions options;
    options.params.sampling.max_new_tokens = 25; // random weights rarely stop on their own
    options.params.sampling.seed = 11;
    return options;
}

void expect_speech(const SynthesisResult &result) {
    ASSERT_GT(result.wave.size(), 0u);
    EXPECT_EQ(result.sample_rate, 24000);
    EXPECT_GT(result.speech_tokens, 0);
    EXPECT_LE(result.speech_tokens, result.t3_steps);
    double energy = 0;
    for (size_t i = 0; i < result.wave.size(); ++i) {
        ASSERT_TRUE(std::isfinite(result.wave[i])) << i;
        energy += double(result.wave[i]) * result.wave[i];
    }
    EXPECT_GT(energy, 0.0); // not silence
}

TEST(NanoModel, OfficialFolderLoadsAndSpeaksEndToEnd) {
    const Engine engine({test::nano_model_dir(), BackendOptions{"cpu", 2}});
    EXPECT_EQ(engine.files().hparams().variant, Variant::nano);
    const t3::HParams &t3 = engine.t3().hparams();
    EXPECT_EQ(t3.backbone_kind(), t3::Backbone::gpt2);
    EXPECT_EQ(t3.n_layers, 12);
    EXPECT_EQ(t3.hidden, 768);
    EXPECT_EQ(t3.speech_vocab, 6563);
    EXPECT_TRUE(engine.flow().hparams().mean_flow);

    Session session(engine);
    const SynthesisOptions options = short_request();
    const SynthesisResult builtin = session.synthesize("Hello there [laugh].", engine.builtin_voice(0.5f), options);
    expect_speech(builtin);

    const Voice cloned = session.voice_from_file(test::turbo_golden_path("ref_voice.wav"), 0.5f);
    EXPECT_EQ(cloned.variant, Variant::nano);
    expect_speech(session.synthesize("Nano speaks, quickly.", cloned, options));

    Voice turbo_voice = cloned;
    turbo_voice.variant = Variant::turbo; // built the same way (voice_fits)
    expect_speech(session.synthesize("Hello.", turbo_voice, options));
}

} // namespace
} // namespace chatterbox
