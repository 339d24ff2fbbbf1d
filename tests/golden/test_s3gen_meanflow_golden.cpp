// needs: turbo-synthetic-weights
// Turbo's mean-flow S3Gen on the Turbo golden case, full-size synthetic weights
// (s3gen_meanflow.safetensors): the hyper-parameters the checkpoint selects, the three trailing
// silence tokens, every flow_* stage against the official implementation (speaker projection,
// encoder, mu, the (t, r) time embeddings and their mix, the estimator at both Euler steps, the
// CFM result, the generated mel) fed the recorded inputs and noise, on the flash, plain and
// (with oneDNN) blocked attention paths within the same golden tolerances; HiFT on the golden mel;
// the S3Tokenizer binding with the front-end constants this checkpoint stores.

#include "core/backend.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/weight_store.h"
#include "kernels/onednn.h"
#include "models/chatterbox/hift/vocoder.h"
#include "models/chatterbox/s3gen/flow.h"
#include "models/chatterbox/s3tokenizer/s3tokenizer.h"
#include "support/golden_component.h"
#include "support/golden_flow.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

using namespace chatterbox;
using namespace chatterbox::s3gen;
using namespace chatterbox::test;

namespace {

std::vector<float> read_f32(const std::string &name) { return read_npy(turbo_golden_path(name + ".npy")).f32(); }

class S3GenMeanFlowGolden : public test::GoldenComponent<FlowModel> {
  protected:
    static void SetUpTestSuite() {
        load(
            "s3gen_meanflow.safetensors", "s3gen.",
            [](const WeightStore &s, Backend &b) {
                return std::make_unique<FlowModel>(s, b, FlowHParams::from_checkpoint(s, "s3gen.flow."));
            },
            test::turbo_synthetic_dir());
        GoldenFlowInputs inputs = read_golden_flow_inputs(turbo_golden_path);
        reference_ = std::move(inputs.reference);
        tokens_ = std::move(inputs.tokens);
        noise_ = read_f32("flow_noise");
    }

    // The generated mel of the golden inputs on this session's paths, against flow_mel.
    static void expect_mel_matches(FlowSession &session) {
        const FlowEncoding encoding = session.encode(tokens_, reference_);
        expect_matches_turbo_golden(encoding.mu, "flow_mu");
        const std::vector<float> full = session.solve(encoding, reference_, noise_);
        expect_matches_turbo_golden(full, "flow_cfm_out_full");
        const int64_t mel = model_->hparams().mel_bins;
        expect_matches_turbo_golden(
            generated_part(full, mel, encoding.frames, int64_t(reference_.prompt_mel.size()) / mel).values, "flow_mel");
    }

    static FlowReference reference_;
    static std::vector<int32_t> tokens_;
    static std::vector<float> noise_;
};

FlowReference S3GenMeanFlowGolden::reference_;
std::vector<int32_t> S3GenMeanFlowGolden::tokens_;
std::vector<float> S3GenMeanFlowGolden::noise_;

} // namespace

TEST_F(S3GenMeanFlowGolden, TheCheckpointSelectsTheMeanFlowDecoder) {
    const FlowHParams &hp = model_->hparams();
    EXPECT_EQ(hp.mean_flow, 1);
    EXPECT_EQ(hp.cfm_steps, 2);
    EXPECT_EQ(cfm_time_grid(hp), (std::vector<float>{0.0f, 0.5f, 1.0f}));
    EXPECT_EQ(hp.cfg_rows(), 1);
    EXPECT_EQ(hp.trailing_silence_tokens, 3);
}

TEST_F(S3GenMeanFlowGolden, InputTokensAreTheSpeechTokensAndThreeSilences) {
    // tts_turbo.py: speech_tokens[speech_tokens < 6561] (T3's drop_invalid_tokens), then S3GEN_SIL x 3.
    std::vector<int32_t> spoken;
    for (int32_t token : read_token_ids(turbo_golden_path("t3_greedy_tokens.npy")))
        if (token < model_->hparams().vocab) spoken.push_back(token);
    EXPECT_EQ(flow_input_tokens(spoken, model_->hparams()), tokens_);
}

TEST_F(S3GenMeanFlowGolden, EveryStageMatchesTheOfficialImplementation) {
    FlowSession session(*model_, *backend_);
    const FlowHParams &hp = model_->hparams();
    auto start = std::chrono::steady_clock::now();
    const FlowEncoding encoding = session.encode(tokens_, reference_);
    std::printf("encoder: %lld tokens -> %lld frames in %.2f s\n", (long long)encoding.tokens,
                (long long)encoding.frames, seconds_since(start));
    expect_matches_turbo_golden(encoding.speaker, "flow_spk_emb");
    expect_matches_turbo_golden(encoding.hidden, "flow_encoder_out");
    expect_matches_turbo_golden(encoding.mu, "flow_mu");

    // The two Euler steps one by one, (t, r) = (0, 0.5) then (0.5, 1), on one (conditional) row.
    EstimatorGraph &graph = session.estimator_graph(encoding.frames);
    graph.set_conditioning(encoding.mu, encoding.speaker, session.prompt_condition(reference_, encoding.frames));
    start = std::chrono::steady_clock::now();
    const std::vector<float> step0 = graph.velocity(noise_, 0.0f, 0.5f);
    std::printf("estimator step (one row, %lld frames): %.2f s\n", (long long)encoding.frames, seconds_since(start));
    expect_matches_turbo_golden(step0, "flow_estimator_step0_out");
    std::vector<float> time_mlp = graph.time_mlp_output(), mixed = graph.time_embedding();
    ASSERT_EQ(time_mlp.size(), size_t(2 * hp.time_embed_dim()));
    ASSERT_EQ(mixed.size(), size_t(hp.time_embed_dim()));

    std::vector<float> x1 = noise_;
    for (size_t i = 0; i < x1.size(); ++i) x1[i] += 0.5f * step0[i];
    expect_matches_turbo_golden(graph.velocity(x1, 0.5f, 1.0f), "flow_estimator_step1_out");
    const std::vector<float> time_mlp1 = graph.time_mlp_output(), mixed1 = graph.time_embedding();
    time_mlp.insert(time_mlp.end(), time_mlp1.begin(), time_mlp1.end());
    mixed.insert(mixed.end(), mixed1.begin(), mixed1.end());
    expect_matches_turbo_golden(time_mlp, "flow_time_mlp_out"); // [t0, r0, t1, r1]
    expect_matches_turbo_golden(mixed, "flow_time_emb_mixed");

    // The solver: its first step's sample is the x1 above.
    std::vector<float> after_step0;
    start = std::chrono::steady_clock::now();
    const std::vector<float> full = session.solve(encoding, reference_, noise_, [&](int step, const auto &x) {
        if (step == 0) after_step0 = x;
    });
    std::printf("CFM, %d mean-flow steps: %.2f s\n", hp.cfm_steps, seconds_since(start));
    // The same sum (up to the compiler's choice of fused multiply-adds).
    ASSERT_EQ(after_step0.size(), x1.size());
    EXPECT_LE(compare(after_step0, x1).max_abs, 1e-6);
    expect_matches_turbo_golden(full, "flow_cfm_out_full");
    const Mel mel =
        generated_part(full, hp.mel_bins, encoding.frames, int64_t(reference_.prompt_mel.size()) / hp.mel_bins);
    EXPECT_EQ(mel.frames, 2 * int64_t(tokens_.size()));
    expect_matches_turbo_golden(mel.values, "flow_mel");
    // generate() is encode + solve + the generated part.
    EXPECT_EQ(session.generate(tokens_, reference_, noise_).values, mel.values);
}

// The other attention paths are f32 throughout, so they meet the same golden tolerances
// (flow_mu 1e-4, flow_cfm_out_full and flow_mel 1e-3 abs, index.json), not a looser bound.
TEST_F(S3GenMeanFlowGolden, PlainAttentionMatchesTheOfficialImplementation) {
    FlowSession session(*model_, *backend_, nn::AttentionPath::plain);
    expect_mel_matches(session);
}

TEST_F(S3GenMeanFlowGolden, OnednnRoutesMatchTheOfficialImplementation) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    BackendOptions options = test_backend_options(2);
    options.kernels.enable = {"onednn_f32"};
    Backend onednn_backend(options);
    const FlowModel onednn_model(*store_, onednn_backend, model_->hparams());
    FlowSession session(onednn_model, onednn_backend, nn::AttentionPath::blocked);
    const auto start = std::chrono::steady_clock::now();
    expect_mel_matches(session);
    std::printf("encoder + CFM, oneDNN routes, blocked attention: %.2f s\n", seconds_since(start));
}

// The default where the CPU multiplies bf16 natively: the mean flow's products in bf16, its mel within
// kFlowMelBf16Bound of the official one.
TEST_F(S3GenMeanFlowGolden, Bf16ProductsStayWithinTheirBound) {
    if (!kernels::onednn_bf16_kernel().runs_here())
        GTEST_SKIP() << "onednn_bf16 cannot run here: " << kernels::onednn_bf16_kernel().why_not_here();
    Backend bf16_backend(with_bf16_products(test_backend_options(2)));
    const FlowModel bf16_model(*store_, bf16_backend, model_->hparams());
    EXPECT_EQ(bf16_model.matmul_kernel_counts().count("ggml_mul_mat"), 0u) << "every product in bf16";
    FlowSession session(bf16_model, bf16_backend);
    const FlowEncoding encoding = session.encode(tokens_, reference_);
    const std::vector<float> full = session.solve(encoding, reference_, noise_);
    const int64_t mel = model_->hparams().mel_bins;
    expect_close(generated_part(full, mel, encoding.frames, int64_t(reference_.prompt_mel.size()) / mel).values,
                 read_f32("flow_mel"), "flow_mel (bf16 products)", abs_tolerance(kFlowMelBf16Bound));
}

TEST_F(S3GenMeanFlowGolden, SameSeedGivesIdenticalMel) {
    FlowSession session(*model_, *backend_);
    expect_seeded_mel_is_deterministic(
        session, flow_input_tokens(std::vector<int32_t>(tokens_.begin(), tokens_.begin() + 5), model_->hparams()),
        reference_.xvector);
}

// The same HiFT as English, with this checkpoint's weights: fed the golden mel and source.
TEST_F(S3GenMeanFlowGolden, HiftOnTheGoldenMel) {
    const hift::VocoderModel vocoder_model(*store_, *backend_,
                                           hift::HiftHParams::from_checkpoint(*store_, "s3gen.mel2wav."));
    hift::VocoderSession vocoder(vocoder_model, *backend_);
    std::vector<float> wave = vocoder.decode(read_f32("flow_mel"), read_f32("hift_source"));
    expect_matches_turbo_golden(wave, "hift_wav_raw");
    hift::apply_trim_fade(wave, vocoder.hparams().fade_samples);
    expect_matches_turbo_golden(wave, "pipeline_wav");
}

// s3gen_meanflow.safetensors stores tokenizer._mel_filters and tokenizer.window (computed
// constants): binding accepts them (they equal what the front end computes).
TEST_F(S3GenMeanFlowGolden, S3TokenizerBindsWithTheStoredConstants) {
    ASSERT_NE(store_->find("s3gen.tokenizer._mel_filters"), nullptr);
    ASSERT_NE(store_->find("s3gen.tokenizer.window"), nullptr);
    EXPECT_NO_THROW(s3tokenizer::S3Tokenizer(
        *store_, *backend_, s3tokenizer::S3TokenizerHParams::from_checkpoint(*store_, "s3gen.tokenizer.")));
}
