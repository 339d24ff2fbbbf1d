// needs: tiny-model
// The speech guards end to end on the tiny synthetic model, whose T3 never samples end-of-speech:
// with the default settings a short sentence ends at the length bound from its text instead of
// max_new_tokens; with the guards off it runs to max_new_tokens. The watched attention heads come
// out of the graphs beside the fast path without changing the logits, and the alignment analyzer
// runs inside generate() on heads the tiny backbone has.

#include "core/error.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/t3/embeddings.h"
#include "models/chatterbox/t3/generate.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numeric>

using namespace chatterbox;

namespace {

class SpeechGuards : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        engine_ =
            std::make_unique<PipelineModel>(PipelineModelOptions{test::tiny_model_path(), BackendOptions{"cpu", 2}});
    }
    static void TearDownTestSuite() { engine_.reset(); }

    static std::vector<int32_t> framed(const std::string &words) { return engine_->text().t3_tokens(words); }

    static SynthesisResult say(const std::string &words, const SynthesisParams &params, bool stream = false) {
        PipelineSession session(*engine_);
        SynthesisOptions options;
        options.params = params;
        options.stream = stream;
        return session.synthesize(words, engine_->builtin_voice(0.5f), options);
    }

    static std::unique_ptr<PipelineModel> engine_;
};

std::unique_ptr<PipelineModel> SpeechGuards::engine_;

} // namespace

TEST_F(SpeechGuards, ShortSentenceEndsAtTheLengthBoundByDefault) {
    const std::string words = "Yes.";
    const t3::HParams &hp = engine_->t3().hparams();
    const int bound = t3::length_bound(hp.guards, int(framed(words).size()) - 2);
    SynthesisParams params; // the defaults: max_new_tokens 1000
    ASSERT_GT(params.sampling.max_new_tokens, bound);
    const SynthesisResult guarded = say(words, params);
    ASSERT_EQ(guarded.piece_ends.size(), 1u);
    EXPECT_EQ(guarded.piece_ends[0], t3::PieceEnd::length_bound) << t3::piece_end_name(guarded.piece_ends[0]);
    EXPECT_EQ(guarded.t3_steps, bound);
    EXPECT_EQ(guarded.pieces_at_length_bound(), 1);

    params.sampling.guards = {}; // every guard off: the official loop, here to a shorter max_new_tokens
    params.sampling.max_new_tokens = bound + 40;
    const SynthesisResult plain = say(words, params);
    EXPECT_EQ(plain.piece_ends, std::vector<t3::PieceEnd>{t3::PieceEnd::max_tokens});
    EXPECT_EQ(plain.t3_steps, bound + 40);
    EXPECT_EQ(plain.pieces_at_length_bound(), 0);
}

TEST_F(SpeechGuards, RateOverrideAndStreamingGiveTheSameBoundedSpeech) {
    SynthesisParams params;
    params.sampling.guards.speech_per_text_token = 2;
    const int bound = t3::length_bound(engine_->t3().hparams().guards, int(framed("Hello there.").size()) - 2, 2);
    const SynthesisResult offline = say("Hello there.", params);
    const SynthesisResult streamed = say("Hello there.", params, /*stream=*/true);
    EXPECT_EQ(offline.t3_steps, bound);
    // Streaming holds trailing silence back exactly as the offline trim drops it.
    EXPECT_EQ(streamed.speech_tokens, offline.speech_tokens);
    EXPECT_EQ(streamed.piece_ends, offline.piece_ends);
}

TEST_F(SpeechGuards, AlignmentGuardNeedsTheAlignedHeads) {
    SynthesisParams params;
    params.sampling.guards.alignment = true;
    test::expect_error([&] { say("Yes.", params); }, {"alignment_guard", "(12, 15)"}); // the tiny T3 has 2 layers
}

// ---- watched heads and the analyzer inside generate(), on a tiny T3 whose aligned heads exist ----

namespace {

struct TinyT3 {
    ModelFiles files = ModelFiles::open(test::tiny_model_path());
    Backend backend{BackendOptions{"cpu", 2}};
    std::unique_ptr<t3::T3Model> model;
    explicit TinyT3(std::vector<t3::AttentionHead> heads) {
        t3::HParams hp = files.hparams().t3;
        hp.guards.aligned_heads = std::move(heads);
        model = std::make_unique<t3::T3Model>(files.weights(), backend, hp);
    }
};

} // namespace

TEST_F(SpeechGuards, WatchedHeadsLeaveTheLogitsAndGiveCausalProbabilities) {
    TinyT3 tiny({{1, 3}, {0, 1}, {1, 0}});
    const t3::CondEmbeddings cond = t3::encode_conditioning(*tiny.model, tiny.backend, engine_->builtin_voice(0.5f).t3);
    const std::vector<int32_t> text = framed("Hello there, how are you?");
    // An f32 cache, and a q8_0 one, whose keys the watched heads read dequantised.
    for (const ggml_type kv_type : {GGML_TYPE_F32, GGML_TYPE_Q8_0}) {
        SCOPED_TRACE(ggml_type_name(kv_type));
        t3::RuntimeOptions exact;
        exact.kv_type = kv_type;
        t3::T3Session plain(*tiny.model, tiny.backend, exact), watched(*tiny.model, tiny.backend, exact);
        watched.watch_heads(tiny.model->hparams().guards.aligned_heads);
        test::expect_error([&] { watched.watch_heads({{2, 0}}); }, "outside the backbone");

        const int length = t3::prefill_length(tiny.model->hparams(), cond, text);
        const std::vector<float> embeds = t3::prefill_embeddings(*tiny.model, cond, text, 2);
        EXPECT_EQ(watched.prefill(embeds, 2, length, 4), plain.prefill(embeds, 2, length, 4));
        EXPECT_TRUE(plain.watched_attention().values.empty());
        const t3::T3Session::AttentionRows prefill = watched.watched_attention();
        ASSERT_GE(prefill.rows, length);
        for (int r = 0; r < length; ++r) {
            const float *row = prefill.row(r);
            EXPECT_NEAR(std::accumulate(row, row + prefill.row_length, 0.0), 1.0, 1e-5) << r;
            for (int c = r + 1; c < prefill.row_length; ++c) ASSERT_EQ(row[c], 0.0f) << r << ", " << c;
        }

        // A decode step's row is the row the prefill of the longer sequence gives its last position.
        const std::vector<float> next = t3::speech_token_embedding(*tiny.model, 17, 1);
        EXPECT_EQ(watched.decode(next), plain.decode(next));
        const t3::T3Session::AttentionRows step = watched.watched_attention();
        ASSERT_EQ(step.rows, 1);
        std::vector<float> longer = embeds;
        const size_t hidden = size_t(tiny.model->hparams().hidden);
        for (int r = 1; r >= 0; --r) // (2, length + 1, hidden): the token appended to each row
            longer.insert(longer.begin() + std::ptrdiff_t(size_t(r + 1) * size_t(length) * hidden), next.begin(),
                          next.end());
        t3::T3Session reference(*tiny.model, tiny.backend, exact);
        reference.watch_heads(tiny.model->hparams().guards.aligned_heads);
        reference.prefill(longer, 2, length + 1, 1);
        const float *want = reference.watched_attention().row(length);
        for (int c = 0; c <= length; ++c) EXPECT_NEAR(step.row(0)[c], want[c], 1e-5) << c;
        for (int c = length + 1; c < step.row_length; ++c) EXPECT_EQ(step.row(0)[c], 0.0f) << c;
    }
}

TEST_F(SpeechGuards, AnalyzerSuppressesEosBeforeTheTextAndEndsThePiece) {
    TinyT3 tiny({{1, 3}, {0, 1}, {1, 0}});
    const t3::CondEmbeddings cond = t3::encode_conditioning(*tiny.model, tiny.backend, engine_->builtin_voice(0.5f).t3);
    const std::vector<int32_t> text = framed("Hello there, how are you?");
    const int eos = tiny.model->hparams().stop_speech_token;
    t3::T3Session session(*tiny.model, tiny.backend);
    t3::SamplingParams params = t3::SamplingParams::guarded();
    params.guards.alignment = true;
    params.max_new_tokens = 200;
    std::vector<float> eos_logits;
    t3::GenerationHooks hooks;
    hooks.on_step = [&](const t3::StepRecord &step) {
        eos_logits.push_back((*step.cfg)[size_t(eos)]);
        return true;
    };
    const t3::GenerationResult result = t3::generate(session, cond, text, params, hooks);
    ASSERT_FALSE(eos_logits.empty());
    // Step 0 sees only the first text column (the monotonic mask): EOS is suppressed there.
    EXPECT_EQ(eos_logits[0], t3::AlignmentAnalyzer::kSuppressed);
    // Whatever ended the piece, it ended before max_new_tokens and says why; a forced EOS is the analyzer's.
    EXPECT_LT(int(result.tokens.size()), params.max_new_tokens);
    if (result.reached_eos()) {
        EXPECT_EQ(result.end, t3::PieceEnd::alignment);
        EXPECT_EQ(eos_logits.back(), t3::AlignmentAnalyzer::kForced);
    }

    // The same session without the analyzer is back on the plain graphs and the plain loop.
    t3::SamplingParams off;
    off.max_new_tokens = 30;
    const t3::GenerationResult plain = t3::generate(session, cond, text, off);
    EXPECT_EQ(plain.end, t3::PieceEnd::max_tokens);
    EXPECT_EQ(session.watched_attention().values.size(), 0u);
}
