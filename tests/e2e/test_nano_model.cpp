// needs: nano-synthetic-weights
// Nano at full size (there is no Nano golden set): the official folder of the synthetic Nano
// weights (GPT-2 small T3, the mean-flow S3Gen, Turbo's tokenizer and conds.pt) loads with the
// published hyper-parameters and speaks end to end with its built-in voice and a cloned one; a
// Turbo voice serves Nano. (Determinism, streaming and voice files: e2e.test_turbo_model, tiny Nano.)

#include "models/chatterbox/pipeline_session.h"
#include "support/speech_checks.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

namespace chatterbox {
namespace {

SynthesisOptions short_request() { return test::bounded_request(25, 11); }

using test::expect_speech;

TEST(NanoModel, OfficialFolderLoadsAndSpeaksEndToEnd) {
    const PipelineModel engine({test::nano_model_dir(), BackendOptions{"cpu", 2}});
    EXPECT_EQ(engine.files().hparams().variant, Variant::nano);
    const t3::HParams &t3 = engine.t3().hparams();
    EXPECT_EQ(t3.backbone_kind(), t3::Backbone::gpt2);
    EXPECT_EQ(t3.n_layers, 12);
    EXPECT_EQ(t3.hidden, 768);
    EXPECT_EQ(t3.speech_vocab, 6563);
    EXPECT_TRUE(engine.flow().hparams().mean_flow);

    PipelineSession session(engine);
    const SynthesisOptions options = short_request();
    const SynthesisResult builtin = session.synthesize("Hello there [laugh].", engine.builtin_voice(0.5f), options);
    expect_speech(builtin);

    const VoiceConditionals cloned = session.voice_from_file(test::turbo_golden_path("ref_voice.wav"), 0.5f);
    EXPECT_EQ(cloned.variant, Variant::nano);
    expect_speech(session.synthesize("Nano speaks, quickly.", cloned, options));

    VoiceConditionals turbo_voice = cloned;
    turbo_voice.variant = Variant::turbo; // built the same way (voice_fits)
    expect_speech(session.synthesize("Hello.", turbo_voice, options));
}

} // namespace
} // namespace chatterbox
