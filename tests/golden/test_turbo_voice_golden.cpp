// needs: turbo-synthetic-weights
// A Turbo voice built from the official folder layout (ResembleAI/chatterbox-turbo: GPT-2 tokenizer
// files, s3gen_meanflow, conds.pt) against tts_turbo.py's prepare_conditionals on the golden case:
// the -27 LUFS reference, the 15 s (375-token) T3 prompt, the speaker embedding, the S3Gen prompt
// and the x-vector; and the built-in voice of the folder's conds.pt.

#include "core/backend.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/voice.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

using namespace chatterbox;
using namespace chatterbox::test;

namespace {

std::vector<int32_t> golden_tokens(const std::string &name) { return read_token_ids(turbo_golden_path(name + ".npy")); }

// The folder's voice models and the golden reference's voice, built once for every test (gigabytes).
struct TurboVoice {
    ModelFiles files = ModelFiles::open(turbo_model_dir());
    Backend backend{test_backend_options(2)};
    VoiceBuilder builder{files, backend};
    VoiceTaps taps;
    VoiceConditionals voice = builder.from_file(backend, turbo_golden_path("ref_voice.wav"), 0.5f, &taps);
};

const TurboVoice &turbo() {
    static const TurboVoice built;
    return built;
}

TEST(TurboVoiceGolden, TheOfficialFolderIsTurbo) {
    EXPECT_EQ(turbo().files.hparams().variant, Variant::turbo);
    EXPECT_EQ(turbo().files.hparams().t3.speech_cond_prompt_len, 375);
    EXPECT_EQ(turbo().files.hparams().flow.mean_flow, 1);
    EXPECT_EQ(turbo().files.hparams().flow.trailing_silence_tokens, 3);
    EXPECT_TRUE(turbo().files.has_tokenizer());
    EXPECT_EQ(turbo().voice.variant, Variant::turbo);
}

TEST(TurboVoiceGolden, ReferenceIsLoudnessNormalised) {
    expect_matches_turbo_golden(turbo().taps.ref_wav_24k, "ref_wav_24k_loudnorm");
}

TEST(TurboVoiceGolden, T3ConditioningMatches) {
    EXPECT_EQ(turbo().voice.t3.prompt_tokens, golden_tokens("t3_cond_prompt_tokens"));
    expect_matches_turbo_golden(turbo().voice.t3.speaker_emb, "ve_speaker_emb");
}

TEST(TurboVoiceGolden, S3GenReferenceMatches) {
    EXPECT_EQ(turbo().voice.s3gen.prompt_tokens, golden_tokens("s3gen_prompt_tokens"));
    expect_matches_turbo_golden(turbo().voice.s3gen.prompt_mel, "s3gen_prompt_feat");
    expect_matches_turbo_golden(turbo().voice.s3gen.xvector, "campplus_xvector");
}

TEST(TurboVoiceGolden, BuiltinVoiceIsTheGoldenCasesVoice) {
    // conds.pt was made by the official prepare_conditionals from the same reference.
    const VoiceConditionals builtin = builtin_voice(turbo().files);
    EXPECT_EQ(builtin.variant, Variant::turbo);
    EXPECT_EQ(builtin.t3.prompt_tokens, golden_tokens("t3_cond_prompt_tokens"));
    EXPECT_EQ(builtin.s3gen.prompt_tokens, golden_tokens("s3gen_prompt_tokens"));
}

} // namespace
