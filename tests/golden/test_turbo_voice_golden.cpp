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

#include <memory>

using namespace chatterbox;
using namespace chatterbox::test;

namespace {

std::vector<int32_t> golden_tokens(const std::string &name) { return read_token_ids(turbo_golden_path(name + ".npy")); }

class TurboVoiceGolden : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        files_ = std::make_unique<ModelFiles>(ModelFiles::open(turbo_model_dir()));
        backend_ = std::make_unique<Backend>(BackendOptions{"cpu", 2});
        builder_ = std::make_unique<VoiceBuilder>(*files_, *backend_);
        taps_ = std::make_unique<VoiceTaps>();
        voice_ = std::make_unique<Voice>(
            builder_->from_file(*backend_, turbo_golden_path("ref_voice.wav"), 0.5f, taps_.get()));
    }
    static void TearDownTestSuite() {
        voice_.reset();
        taps_.reset();
        builder_.reset();
        backend_.reset();
        files_.reset();
    }
    static std::unique_ptr<ModelFiles> files_;
    static std::unique_ptr<Backend> backend_;
    static std::unique_ptr<VoiceBuilder> builder_;
    static std::unique_ptr<VoiceTaps> taps_;
    static std::unique_ptr<Voice> voice_;
};

std::unique_ptr<ModelFiles> TurboVoiceGolden::files_;
std::unique_ptr<Backend> TurboVoiceGolden::backend_;
std::unique_ptr<VoiceBuilder> TurboVoiceGolden::builder_;
std::unique_ptr<VoiceTaps> TurboVoiceGolden::taps_;
std::unique_ptr<Voice> TurboVoiceGolden::voice_;

TEST_F(TurboVoiceGolden, TheOfficialFolderIsTurbo) {
    EXPECT_EQ(files_->hparams().variant, Variant::turbo);
    EXPECT_EQ(files_->hparams().t3.speech_cond_prompt_len, 375);
    EXPECT_EQ(files_->hparams().flow.mean_flow, 1);
    EXPECT_EQ(files_->hparams().flow.trailing_silence_tokens, 3);
    EXPECT_TRUE(files_->has_tokenizer());
    EXPECT_EQ(voice_->variant, Variant::turbo);
}

TEST_F(TurboVoiceGolden, ReferenceIsLoudnessNormalised) {
    expect_matches_turbo_golden(taps_->ref_wav_24k, "ref_wav_24k_loudnorm");
}

TEST_F(TurboVoiceGolden, T3ConditioningMatches) {
    EXPECT_EQ(voice_->t3.prompt_tokens, golden_tokens("t3_cond_prompt_tokens"));
    expect_matches_turbo_golden(voice_->t3.speaker_emb, "ve_speaker_emb");
}

TEST_F(TurboVoiceGolden, S3GenReferenceMatches) {
    EXPECT_EQ(voice_->s3gen.prompt_tokens, golden_tokens("s3gen_prompt_tokens"));
    expect_matches_turbo_golden(voice_->s3gen.prompt_mel, "s3gen_prompt_feat");
    expect_matches_turbo_golden(voice_->s3gen.xvector, "campplus_xvector");
}

TEST_F(TurboVoiceGolden, BuiltinVoiceIsTheGoldenCasesVoice) {
    // conds.pt was made by the official prepare_conditionals from the same reference.
    const Voice builtin = builtin_voice(*files_);
    EXPECT_EQ(builtin.variant, Variant::turbo);
    EXPECT_EQ(builtin.t3.prompt_tokens, golden_tokens("t3_cond_prompt_tokens"));
    EXPECT_EQ(builtin.s3gen.prompt_tokens, golden_tokens("s3gen_prompt_tokens"));
}

} // namespace
