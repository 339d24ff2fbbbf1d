// needs: synthetic-weights
// The VoiceEncoder from the golden 40-bin mel (ve_mel), full-size synthetic weights: per-partial
// embeddings and the speaker embedding against the official implementation; input validation.

#include "core/backend.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/weight_store.h"
#include "models/chatterbox/voice_encoder/voice_encoder.h"
#include "support/golden_component.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

using namespace chatterbox;
using namespace chatterbox::test;

namespace {

class VoiceEncoderGolden : public test::GoldenComponent<voice_encoder::VoiceEncoder> {
  protected:
    static void SetUpTestSuite() {
        load("ve.safetensors", "ve.", [](const WeightStore &s, Backend &b) {
            return std::make_unique<voice_encoder::VoiceEncoder>(s, b, voice_encoder::VoiceEncoderHParams{});
        });
        const NpyArray mel = read_npy(golden_path("ve_mel.npy"));
        frames_ = mel.shape.at(0);
        mel_ = mel.f32();
    }
    static std::vector<float> mel_;
    static int64_t frames_;
};

std::vector<float> VoiceEncoderGolden::mel_;
int64_t VoiceEncoderGolden::frames_ = 0;

TEST_F(VoiceEncoderGolden, PartialAndSpeakerEmbeddings) {
    ASSERT_EQ(frames_, 697);
    const voice_encoder::Embedding e = model_->embed(mel_, frames_);
    EXPECT_EQ(e.partials, 8);
    expect_matches_golden(e.partial_embeds, "ve_partial_embeds");
    expect_matches_golden(e.speaker_emb, "ve_speaker_emb");
    // The partials shared among threads (3 and 3 and 2, 8 on one each): the same bits.
    for (int threads : {3, 8}) {
        const voice_encoder::Embedding shared = model_->embed(mel_, frames_, {}, threads);
        EXPECT_EQ(shared.partial_embeds, e.partial_embeds) << threads << " threads";
        EXPECT_EQ(shared.speaker_emb, e.speaker_emb) << threads << " threads";
    }
}

TEST_F(VoiceEncoderGolden, ShortMelIsOnePaddedPartial) {
    // 10 frames: one partial, zero-padded to 160 frames; still a unit vector.
    const std::vector<float> head(mel_.begin(), mel_.begin() + 10 * voice_encoder::kMelBins);
    const voice_encoder::Embedding e = model_->embed(head, 10);
    ASSERT_EQ(e.partials, 1);
    double norm = 0;
    for (float v : e.speaker_emb) norm += double(v) * v;
    EXPECT_NEAR(norm, 1.0, 1e-5);
    // The mean of one unit vector, renormalised: the same vector up to rounding.
    ASSERT_EQ(e.partial_embeds.size(), e.speaker_emb.size());
    EXPECT_LT(compare(e.speaker_emb, e.partial_embeds).max_abs, 1e-6);
}

TEST_F(VoiceEncoderGolden, RejectsBadInput) {
    EXPECT_THROW(model_->embed({}, 0), Error);
    EXPECT_THROW(model_->embed(mel_, frames_ - 1), Error);
    std::vector<float> bad = mel_;
    bad[4321] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_THROW(model_->embed(bad, frames_), Error);
    voice_encoder::PartialOptions options;
    options.min_coverage = 0.0;
    EXPECT_THROW(model_->embed(mel_, frames_, options), Error);
}

TEST(VoiceEncoderWeights, ReportsMissingAndUnexpectedTensors) {
    WeightStore store;
    store.add_safetensors(synthetic_dir() + "/ve.safetensors", "ve.");
    store.add_tensor(HostTensor("ve.extra.weight", GGML_TYPE_F32, {3}));
    Backend backend(BackendOptions{"cpu", 1});
    try {
        voice_encoder::VoiceEncoder encoder(store, backend, voice_encoder::VoiceEncoderHParams{});
        FAIL() << "an unexpected tensor was accepted";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("ve.extra.weight"), std::string::npos) << e.what();
    }
    EXPECT_THROW(voice_encoder::VoiceEncoder(store, backend, voice_encoder::VoiceEncoderHParams{}, "missing."), Error);
}

} // namespace
