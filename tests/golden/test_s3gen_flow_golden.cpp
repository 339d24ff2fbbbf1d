// needs: synthetic-weights
// The S3Gen flow on the main golden case, full-size synthetic weights: every flow_* stage against
// the official implementation (speaker projection, encoder, mu, estimator at the first Euler step,
// the full CFM result and the generated mel), fed the recorded inputs and noise, on the f32 path
// (ggml f32 products, the bf16 product off; the estimator's default attention: blocked with oneDNN,
// else ggml's flash), an estimator step on ggml's flash attention, and the oneDNN routes (the
// onednn_f32 matmul kernel, blocked attention), within the same golden tolerances; the bf16 products
// (the default where the CPU has AVX-512 BF16) within their own bound; then input validation and
// seeded determinism.

#include "core/backend.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/weight_store.h"
#include "kernels/onednn.h"
#include "models/chatterbox/s3gen/flow.h"
#include "support/golden_component.h"
#include "support/golden_flow.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <utility>

using namespace chatterbox;
using namespace chatterbox::s3gen;
using namespace chatterbox::test;

namespace {

std::vector<float> read_f32(const std::string &name) { return read_npy(golden_path(name + ".npy")).f32(); }

// How far flow_mel may be from the official 10-step one at fewer CFM steps (f32 products), each a
// little above what FewerStepsStayWithinTheirMeasuredDistance measured.
// (Measured 0.123, 0.186 and 0.154 on 2026-12-05: on these synthetic weights the distance does not
// fall steadily with more steps; a trained velocity field is smoother.)
constexpr std::pair<int, double> kFewerStepBounds[] = {{8, 0.15}, {6, 0.22}, {4, 0.19}};

class S3GenFlowGolden : public test::GoldenComponent<FlowModel> {
  protected:
    static void SetUpTestSuite() {
        load("s3gen.safetensors", "s3gen.", [](const WeightStore &s, Backend &b) {
            return std::make_unique<FlowModel>(s, b, FlowHParams::standard());
        });
        const auto start = std::chrono::steady_clock::now();
        std::printf("flow weights bound and uploaded in %.2f s (%.1f MB)\n", seconds_since(start),
                    double(model_->weight_bytes()) / 1e6);
        GoldenFlowInputs inputs = read_golden_flow_inputs(golden_path);
        reference_ = std::move(inputs.reference);
        tokens_ = std::move(inputs.tokens);
    }

    static FlowReference reference_;
    static std::vector<int32_t> tokens_;
};

FlowReference S3GenFlowGolden::reference_;
std::vector<int32_t> S3GenFlowGolden::tokens_;

} // namespace

TEST_F(S3GenFlowGolden, EveryStageMatchesTheOfficialImplementation) {
    FlowSession session(*model_, *backend_);
    auto start = std::chrono::steady_clock::now();
    const FlowEncoding encoding = session.encode(tokens_, reference_);
    std::printf("encoder: %lld tokens -> %lld frames in %.2f s\n", (long long)encoding.tokens,
                (long long)encoding.frames, seconds_since(start));
    expect_matches_golden(encoding.speaker, "flow_spk_emb");
    expect_matches_golden(encoding.hidden, "flow_encoder_out");
    expect_matches_golden(encoding.mu, "flow_mu");

    const std::vector<float> noise = read_f32("flow_noise");
    EstimatorGraph &graph = session.estimator_graph(encoding.frames);
    graph.set_conditioning(encoding.mu, encoding.speaker, session.prompt_condition(reference_, encoding.frames));
    start = std::chrono::steady_clock::now();
    expect_matches_golden(graph.velocity(noise, 0.0f, cosine_time_grid(10)[1]), "flow_estimator_step0_out");
    std::printf("estimator step (CFG pair, %lld frames): %.2f s\n", (long long)encoding.frames, seconds_since(start));

    start = std::chrono::steady_clock::now();
    const std::vector<float> full = session.solve(encoding, reference_, noise);
    std::printf("CFM, %d steps: %.2f s\n", model_->hparams().cfm_steps, seconds_since(start));
    expect_matches_golden(full, "flow_cfm_out_full");
    const int64_t prompt_frames = int64_t(reference_.prompt_mel.size()) / model_->hparams().mel_bins;
    const Mel mel = generated_part(full, model_->hparams().mel_bins, encoding.frames, prompt_frames);
    EXPECT_EQ(mel.frames, 2 * int64_t(tokens_.size()));
    expect_matches_golden(mel.values, "flow_mel");
}

// ggml's flash attention, the estimator's default in builds without oneDNN: one step (the whole CFM
// on it ran in this suite until blocked became the default).
TEST_F(S3GenFlowGolden, FlashAttentionStepMatchesTheOfficialImplementation) {
    FlowSession session(*model_, *backend_, nn::AttentionPath::flash);
    const FlowEncoding encoding = session.encode(tokens_, reference_);
    EstimatorGraph &graph = session.estimator_graph(encoding.frames);
    graph.set_conditioning(encoding.mu, encoding.speaker, session.prompt_condition(reference_, encoding.frames));
    expect_matches_golden(graph.velocity(read_f32("flow_noise"), 0.0f, cosine_time_grid(10)[1]),
                          "flow_estimator_step0_out");
}

// The fast CPU routes are f32 throughout, so they meet the reference path's golden tolerances
// (flow_mel: 1e-3 abs, index.json), not a looser bound.
TEST_F(S3GenFlowGolden, OnednnRoutesMatchTheOfficialImplementation) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    BackendOptions options = test_backend_options(2);
    options.kernels.enable = {"onednn_f32"};
    Backend onednn_backend(options);
    const FlowModel onednn_model(*store_, onednn_backend, FlowHParams::standard());
    FlowSession session(onednn_model, onednn_backend, nn::AttentionPath::blocked);
    const FlowEncoding encoding = session.encode(tokens_, reference_);
    expect_matches_golden(encoding.hidden, "flow_encoder_out");
    expect_matches_golden(encoding.mu, "flow_mu");
    const std::vector<float> noise = read_f32("flow_noise");
    EstimatorGraph &graph = session.estimator_graph(encoding.frames);
    graph.set_conditioning(encoding.mu, encoding.speaker, session.prompt_condition(reference_, encoding.frames));
    expect_matches_golden(graph.velocity(noise, 0.0f, cosine_time_grid(10)[1]), "flow_estimator_step0_out");
    const auto start = std::chrono::steady_clock::now();
    const std::vector<float> full = session.solve(encoding, reference_, noise);
    std::printf("CFM, %d steps, oneDNN routes: %.2f s\n", model_->hparams().cfm_steps, seconds_since(start));
    const int64_t prompt_frames = int64_t(reference_.prompt_mel.size()) / model_->hparams().mel_bins;
    expect_matches_golden(generated_part(full, model_->hparams().mel_bins, encoding.frames, prompt_frames).values,
                          "flow_mel");
}

// The default where the CPU multiplies bf16 natively: every product of the flow through the bf16
// kernel, the generated mel within kFlowMelBf16Bound of the official one (the distance is printed).
TEST_F(S3GenFlowGolden, Bf16ProductsStayWithinTheirBound) {
    if (!kernels::onednn_bf16_kernel().runs_here())
        GTEST_SKIP() << "onednn_bf16 cannot run here: " << kernels::onednn_bf16_kernel().why_not_here();
    Backend bf16_backend(with_bf16_products(test_backend_options(2)));
    const FlowModel bf16_model(*store_, bf16_backend, FlowHParams::standard());
    EXPECT_EQ(bf16_model.matmul_kernel_counts().count("ggml_mul_mat"), 0u) << "every product in bf16";
    FlowSession session(bf16_model, bf16_backend);
    const FlowEncoding encoding = session.encode(tokens_, reference_);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<float> full = session.solve(encoding, reference_, read_f32("flow_noise"));
    std::printf("CFM, %d steps, bf16 products: %.2f s\n", model_->hparams().cfm_steps, seconds_since(start));
    const int64_t prompt_frames = int64_t(reference_.prompt_mel.size()) / model_->hparams().mel_bins;
    expect_close(generated_part(full, model_->hparams().mel_bins, encoding.frames, prompt_frames).values,
                 read_f32("flow_mel"), "flow_mel (bf16 products)", abs_tolerance(kFlowMelBf16Bound));
}

// --cfm-steps below the official 10 (f32 products): the generated mel moves away from the official
// one, each count within the distance measured for it here and still far from the 10-step result
// (bench/README.md "Fewer CFM steps" has the figures; the synthetic weights' velocity field is not a
// trained one, so these bound this case, not the sound of a real voice).
TEST_F(S3GenFlowGolden, FewerStepsStayWithinTheirMeasuredDistance) {
    FlowSession session(*model_, *backend_);
    const FlowEncoding encoding = session.encode(tokens_, reference_);
    const std::vector<float> official = read_f32("flow_mel");
    const int64_t prompt_frames = int64_t(reference_.prompt_mel.size()) / model_->hparams().mel_bins;
    for (const auto &[steps, bound] : kFewerStepBounds) {
        session.set_cfm_steps(steps);
        const std::vector<float> full = session.solve(encoding, reference_, read_f32("flow_noise"));
        const std::vector<float> mel =
            generated_part(full, model_->hparams().mel_bins, encoding.frames, prompt_frames).values;
        expect_close(mel, official, concat("flow_mel at ", steps, " CFM steps"), abs_tolerance(bound));
        EXPECT_GT(compare(mel, official).max_abs, 0.05) << steps << " steps are not the official 10";
    }
}

TEST_F(S3GenFlowGolden, InvalidInputsGiveClearErrors) {
    FlowSession session(*model_, *backend_);
    auto expect_error = [&](const std::vector<int32_t> &tokens, const FlowReference &reference,
                            const std::string &fragment) {
        try {
            session.validate(tokens, reference);
            ADD_FAILURE() << "no error; expected one mentioning '" << fragment << "'";
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    };
    expect_error({}, reference_, "empty");
    expect_error({1, 2, 6561}, reference_, "id 6561 at position 2");
    expect_error({5, -1}, reference_, "id -1 at position 1");
    FlowReference bad_prompt = reference_;
    bad_prompt.prompt_tokens[3] = 7000;
    expect_error(tokens_, bad_prompt, "prompt token id 7000 at position 3");
    expect_error(std::vector<int32_t>(size_t(model_->hparams().max_total_tokens), 1), reference_, "exceed the limit");
    FlowReference short_xvector = reference_;
    short_xvector.xvector.pop_back();
    expect_error(tokens_, short_xvector, "x-vector has 191 values");
    FlowReference ragged_mel = reference_;
    ragged_mel.prompt_mel.pop_back();
    expect_error(tokens_, ragged_mel, "whole number");
    FlowReference long_prompt = reference_;
    long_prompt.prompt_tokens.resize(2);
    expect_error({7}, long_prompt, "nothing would be generated");
    FlowReference nan_xvector = reference_;
    nan_xvector.xvector[0] = NAN;
    expect_error(tokens_, nan_xvector, "non-finite");
    // generate() checks before it computes anything
    EXPECT_THROW(session.generate({}, reference_, std::vector<float>()), Error);
    FlowReference voice; // no prompt: a short encoding suffices for the noise checks
    voice.xvector = reference_.xvector;
    const FlowEncoding short_encoding = session.encode({1, 2, 3}, voice);
    EXPECT_THROW(session.solve(short_encoding, voice, std::vector<float>(5, 0.0f)), Error);
    std::vector<float> nan_noise(size_t(model_->hparams().mel_bins * short_encoding.frames), 0.0f);
    nan_noise[7] = NAN;
    EXPECT_THROW(session.solve(short_encoding, voice, nan_noise), Error);
}

TEST_F(S3GenFlowGolden, SameSeedGivesIdenticalMel) {
    FlowSession session(*model_, *backend_);
    expect_seeded_mel_is_deterministic(session, std::vector<int32_t>(tokens_.begin(), tokens_.begin() + 6),
                                       reference_.xvector);
}

// Sixteen requests of different lengths each attend over their own frames in every transformer
// block: on the plain path (the estimator's on a GPU) that once outgrew the graph's tensor budget
// and crashed while building.
TEST_F(S3GenFlowGolden, SixteenRequestsOfDifferentLengthsBuildOnEveryAttentionPath) {
    std::vector<int64_t> frames;
    for (int64_t i = 0; i < 16; ++i) frames.push_back(20 + 3 * i);
    std::vector<nn::AttentionPath> paths{nn::AttentionPath::plain, nn::AttentionPath::flash};
    if (kernels::onednn_available()) paths.push_back(nn::AttentionPath::blocked);
    for (nn::AttentionPath path : paths) {
        SCOPED_TRACE(nn::attention_path_name(path));
        EXPECT_NO_THROW(EstimatorGraph(model_->estimator(), model_->hparams(), *backend_, frames, path));
    }
}
