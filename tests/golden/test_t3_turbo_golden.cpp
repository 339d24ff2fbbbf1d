// needs: turbo-synthetic-weights
// The Turbo T3 (GPT-2 medium) against the golden arrays of the official run on the synthetic Turbo
// weights (tests/data/turbo, from shared/golden/turbo): conditioning embeddings, 20 teacher-forced
// steps (raw logits and the logits after Turbo's processor chain temperature -> top-k -> top-p ->
// repetition penalty), 60 greedy steps (tokens and raw logits). The exact path (plain attention, f32
// KV cache) must meet index.json's tolerances; the fast path (flash attention, f16 KV cache) is
// held to the looser f16-rounding bound of the English test.

#include "core/backend.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/weight_store.h"
#include "models/chatterbox/t3/cond_encoder.h"
#include "models/chatterbox/t3/embeddings.h"
#include "models/chatterbox/t3/generate.h"
#include "models/chatterbox/variant_spec.h"
#include "support/golden_component.h"
#include "support/t3_recording.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

using namespace chatterbox;
using namespace chatterbox::t3;
using chatterbox::test::compare;
using chatterbox::test::turbo_golden_path;
using chatterbox::test::turbo_golden_tolerance;

namespace {

using Recorded = test::T3Recording;

std::vector<int32_t> golden_tokens(const std::string &name) { return test::read_tokens(turbo_golden_path(name)); }

std::vector<float> golden_f32(const std::string &name) { return read_npy(turbo_golden_path(name + ".npy")).f32(); }

// Compares against a golden array; tolerance < 0 means index.json's.
void expect_close(const std::vector<float> &got, const std::string &name, double tolerance = -1) {
    test::expect_close(got, golden_f32(name), name,
                       tolerance < 0 ? turbo_golden_tolerance(name) : test::abs_tolerance(tolerance));
}

// The model is loaded once for every test here: 1.6 GB of f32 weights.
class T3TurboGolden : public test::GoldenComponent<T3Model> {
  protected:
    static void SetUpTestSuite() {
        load(
            "t3_turbo_v1.safetensors", "t3.",
            [](const WeightStore &s, Backend &b) {
                return std::make_unique<T3Model>(s, b,
                                                 HParams::from_checkpoint(s, "t3.", variant_spec(Variant::turbo).t3));
            },
            test::turbo_synthetic_dir());
        voice_.speaker_emb = golden_f32("ve_speaker_emb");
        voice_.prompt_tokens = golden_tokens("t3_cond_prompt_tokens.npy");
        cond_ = std::make_unique<CondEmbeddings>(encode_conditioning(*model_, *backend_, voice_));
        text_ = golden_tokens("text_tokens.npy"); // GPT-2 ids, no start/stop tokens
    }

    static RuntimeOptions exact_path() {
        RuntimeOptions o;
        o.attention = nn::AttentionPath::plain;
        o.kv_type = GGML_TYPE_F32;
        return o;
    }

    static Recorded run(T3Session &session, const SamplingParams &params, const std::vector<int32_t> &forced = {}) {
        return test::record_generation(session, *cond_, text_, params, forced);
    }
    // tts_turbo.py generate()'s defaults, as index.json's "teacher_forcing_processors" lists them.
    static SamplingParams turbo_params() { return variant_spec(Variant::turbo).t3.sampler.defaults; }
    static SamplingParams greedy_params() {
        SamplingParams p = turbo_params();
        p.greedy = true;
        p.max_new_tokens = int(golden_tokens("t3_greedy_tokens.npy").size());
        return p;
    }

    static inline Conditioning voice_;
    static inline std::unique_ptr<CondEmbeddings> cond_;
    static inline std::vector<int32_t> text_;
};

} // namespace

TEST_F(T3TurboGolden, HyperParametersFromTheCheckpoint) {
    const HParams &hp = model_->hparams();
    EXPECT_EQ(hp.backbone_kind(), Backbone::gpt2);
    EXPECT_EQ(hp.n_layers, 24);
    EXPECT_EQ(hp.hidden, 1024);
    EXPECT_EQ(hp.ffn, 4096);
    EXPECT_EQ(hp.positions, 8196);
    EXPECT_EQ(hp.text_vocab, 50276);
    EXPECT_EQ(hp.speech_vocab, 6563);
    const SamplingParams p = turbo_params();
    EXPECT_FLOAT_EQ(p.temperature, 0.8f);
    EXPECT_EQ(p.top_k, 1000);
    EXPECT_FLOAT_EQ(p.top_p, 0.95f);
    EXPECT_FLOAT_EQ(p.repetition_penalty, 1.2f);
}

TEST_F(T3TurboGolden, ConditioningEmbeddings) {
    EXPECT_EQ(cond_->length, 376); // speaker + 375 prompt tokens
    expect_close(cond_->values, "t3_cond_emb");
}

TEST_F(T3TurboGolden, TeacherForcedLogits) {
    T3Session session(*model_, *backend_, exact_path());
    const std::vector<int32_t> forced = golden_tokens("t3_tf_tokens.npy");
    const Recorded rec = run(session, turbo_params(), forced);
    EXPECT_EQ(session.n_rows(), 1); // no CFG row
    EXPECT_EQ(rec.result.tokens, forced);
    expect_close(rec.raw, "t3_tf_logits_raw");

    // Processed logits: the same finite values; a token may be kept on one side and filtered on the
    // other only at the top-k / top-p boundary, i.e. where its tempered logit is within the raw
    // logits' error of the smallest one the reference kept.
    const std::vector<float> expected = golden_f32("t3_tf_logits_processed");
    const std::vector<float> golden_raw = golden_f32("t3_tf_logits_raw");
    ASSERT_EQ(rec.processed.size(), expected.size());
    const double tolerance = turbo_golden_tolerance("t3_tf_logits_processed").value;
    const float temperature = turbo_params().temperature;
    const size_t vocab = size_t(model_->hparams().speech_vocab);
    double max_finite_error = 0;
    size_t boundary_flips = 0;
    for (size_t step = 0; step < forced.size(); ++step) {
        float smallest_kept = INFINITY;
        for (size_t i = 0; i < vocab; ++i)
            if (std::isfinite(expected[step * vocab + i]))
                smallest_kept = std::min(smallest_kept, golden_raw[step * vocab + i] / temperature);
        for (size_t i = 0; i < vocab; ++i) {
            const float got = rec.processed[step * vocab + i], want = expected[step * vocab + i];
            if (std::isfinite(got) && std::isfinite(want)) {
                max_finite_error = std::max(max_finite_error, double(std::fabs(got - want)));
            } else if (std::isfinite(got) != std::isfinite(want)) {
                ++boundary_flips;
                const float tempered = rec.raw[step * vocab + i] / temperature;
                EXPECT_NEAR(tempered, smallest_kept, 2 * tolerance / temperature)
                    << "step " << step << " token " << i << " kept/filtered away from the boundary";
            }
        }
    }
    std::printf("  t3_tf_logits_processed       max abs error %.3g on kept tokens, %zu boundary flips\n",
                max_finite_error, boundary_flips);
    EXPECT_LE(max_finite_error, tolerance);
    EXPECT_LE(boundary_flips, forced.size()); // a rare event, not a pattern
}

TEST_F(T3TurboGolden, GreedyDecode) {
    T3Session session(*model_, *backend_, exact_path());
    const Recorded rec = run(session, greedy_params());
    const std::vector<float> margin = golden_f32("t3_greedy_margin");
    std::printf("  smallest greedy margin %.3g\n", double(*std::min_element(margin.begin(), margin.end())));
    EXPECT_EQ(rec.result.tokens, golden_tokens("t3_greedy_tokens.npy"));
    expect_close(rec.raw, "t3_greedy_logits_raw");
}

TEST_F(T3TurboGolden, FastPathTeacherForcedAndGreedy) {
    T3Session session(*model_, *backend_); // flash attention, f16 KV cache
    const Recorded tf = run(session, turbo_params(), golden_tokens("t3_tf_tokens.npy"));
    expect_close(tf.raw, "t3_tf_logits_raw", test::kT3FastPathTolerance);
    // Greedy on the same session (graphs and cache reused): where the reference's margin is clear of
    // the fast path's error the tokens are the same.
    SamplingParams params = greedy_params();
    params.max_new_tokens = 24;
    const Recorded greedy = run(session, params);
    const std::vector<int32_t> expected = golden_tokens("t3_greedy_tokens.npy");
    const std::vector<float> margin = golden_f32("t3_greedy_margin");
    size_t same = 0;
    while (same < greedy.result.tokens.size() && greedy.result.tokens[same] == expected[same]) ++same;
    std::printf("  fast path greedy: first %zu of %d tokens equal\n", same, params.max_new_tokens);
    // Up to and including the first differing step the history is the reference's: logits agree.
    const size_t vocab = size_t(model_->hparams().speech_vocab);
    const size_t compared = std::min(same + 1, size_t(params.max_new_tokens));
    const std::vector<float> reference = golden_f32("t3_greedy_logits_raw");
    const test::Diff d =
        compare(std::vector<float>(greedy.raw.begin(), greedy.raw.begin() + std::ptrdiff_t(compared * vocab)),
                std::vector<float>(reference.begin(), reference.begin() + std::ptrdiff_t(compared * vocab)));
    std::printf("  fast path greedy logits (%zu steps) max abs error %.3g\n", compared, d.max_abs);
    EXPECT_LE(d.max_abs, test::kT3FastPathTolerance);
    if (same < size_t(params.max_new_tokens)) {
        EXPECT_LE(margin[same], 2 * test::kT3FastPathTolerance)
            << "the fast path changed a clear greedy choice at step " << same;
    }
}

TEST_F(T3TurboGolden, GuidanceAndMinPAreIgnoredAsTheOfficialGenerateDoes) {
    T3Session session(*model_, *backend_, exact_path());
    SamplingParams params = turbo_params();
    params.cfg_weight = 0.5f;
    params.min_p = 0.3f;
    std::vector<int32_t> forced = golden_tokens("t3_tf_tokens.npy");
    forced.resize(3);
    const Recorded rec = run(session, params, forced);
    EXPECT_EQ(session.n_rows(), 1);
    std::vector<float> expected = golden_f32("t3_tf_logits_processed");
    expected.resize(rec.processed.size());
    size_t same_filter = 0;
    for (size_t i = 0; i < expected.size(); ++i)
        same_filter += std::isfinite(expected[i]) == std::isfinite(rec.processed[i]);
    EXPECT_GE(same_filter, expected.size() - forced.size()); // min_p 0.3 would have removed hundreds per step
}

TEST_F(T3TurboGolden, InvalidRequestsFailBeforeComputing) {
    T3Session session(*model_, *backend_);
    const SamplingParams params = turbo_params();
    test::expect_error([&] { generate(session, *cond_, {}, params); }, "empty");
    test::expect_error([&] { generate(session, *cond_, {50276}, params); }, "outside the text vocabulary");
    SamplingParams too_long = params;
    // Token i goes in at position prefill + i - 1: one more than the 8196 positions hold.
    too_long.max_new_tokens = 8196 - prefill_length(model_->hparams(), *cond_, text_) + 2;
    test::expect_error([&] { generate(session, *cond_, text_, too_long); }, "positions of the model");
    SamplingParams bad_k = params;
    bad_k.top_k = -1;
    test::expect_error([&] { generate(session, *cond_, text_, bad_k); }, "top_k");
    Conditioning bad = voice_;
    bad.prompt_tokens = {6563};
    test::expect_error([&] { encode_conditioning(*model_, *backend_, bad); }, "outside");
    EXPECT_EQ(session.graphs_built(), 0);
}
