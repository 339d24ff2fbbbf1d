// needs: tiny-model
// t3::T3Session's decode graphs attend over the used cache length rounded up to decode_bucket. On
// the tiny model: the logits of every step equal those of one graph over the whole cache (both
// attention paths, with and without guidance), each bucket's graph is built once per session, and
// a later request on the same session gives what a fresh session gives. And generation with
// ignore_eos runs all max_new_tokens steps where it would have ended at EOS. A q8_0 cache gives
// logits near the f16 cache's, on the single-query path only. A generation hands back its
// generator, and one given a generator continues it instead of seeding.

#include "core/backend.h"
#include "core/error.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/runtime.h"
#include "models/chatterbox/t3/embeddings.h"
#include "models/chatterbox/t3/generate.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

using namespace chatterbox;
using namespace chatterbox::t3;

namespace {

constexpr int kWholeCache = 1 << 20; // a decode bucket no cache reaches: one graph over the whole capacity

class T3SessionTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        PipelineModelOptions options;
        options.model_path = test::tiny_model_path();
        options.backend.threads = 2;
        options.components = components(Component::t3, Component::text);
        engine_ = std::make_unique<PipelineModel>(options);
        backend_ = std::make_unique<Backend>(options.backend);
        cond_ = std::make_unique<CondEmbeddings>(
            encode_conditioning(engine_->t3(), *backend_, engine_->builtin_voice(0.5f).t3));
    }
    static void TearDownTestSuite() {
        cond_.reset();
        backend_.reset();
        engine_.reset();
    }

    static std::vector<int32_t> text(int n_ids) {
        const HParams &hp = engine_->t3().hparams();
        std::vector<int32_t> framed{hp.start_text_token};
        for (int i = 0; i < n_ids; ++i) framed.push_back(1 + (i * 37) % (hp.start_text_token - 1));
        framed.push_back(hp.stop_text_token);
        return framed;
    }

    static std::vector<int32_t> text(const std::string &words) { return engine_->text().t3_tokens(words); }

    // Teacher-forced speech units (no EOS), so every request runs all its steps.
    static std::vector<int32_t> forced(int steps) {
        std::vector<int32_t> tokens;
        for (int i = 0; i < steps; ++i) tokens.push_back((i * 101) % engine_->t3().hparams().speech_token_limit);
        return tokens;
    }

    // The raw logits of every step, concatenated.
    static std::vector<float> raw_logits(T3Session &session, const std::vector<int32_t> &text_tokens, int steps,
                                         float cfg_weight) {
        SamplingParams params;
        params.cfg_weight = cfg_weight;
        params.max_new_tokens = steps;
        GenerationHooks hooks;
        hooks.forced_tokens = forced(steps);
        std::vector<float> raw;
        hooks.on_step = [&](const StepRecord &step) {
            raw.insert(raw.end(), step.raw->begin(), step.raw->end());
            return true;
        };
        EXPECT_EQ(generate(session, *cond_, text_tokens, params, hooks).tokens.size(), size_t(steps));
        return raw;
    }

    static t3::RuntimeOptions options(nn::AttentionPath attention, ggml_type kv_type, int decode_bucket) {
        t3::RuntimeOptions o;
        o.attention = attention;
        o.kv_type = kv_type;
        o.decode_bucket = decode_bucket;
        return o;
    }

    static std::unique_ptr<PipelineModel> engine_;
    static std::unique_ptr<Backend> backend_;
    static std::unique_ptr<CondEmbeddings> cond_;
};

std::unique_ptr<PipelineModel> T3SessionTest::engine_;
std::unique_ptr<Backend> T3SessionTest::backend_;
std::unique_ptr<CondEmbeddings> T3SessionTest::cond_;

} // namespace

TEST_F(T3SessionTest, BucketedDecodeGivesTheLogitsOfTheWholeCache) {
    constexpr int kSteps = 150; // 3 buckets of 64 past the prefill
    for (const auto &[attention, kv_type] :
         {std::pair{nn::AttentionPath::flash, GGML_TYPE_F16}, std::pair{nn::AttentionPath::flash, GGML_TYPE_Q8_0},
          std::pair{nn::AttentionPath::plain, GGML_TYPE_F32}})
        for (const float cfg_weight : {0.5f, 0.0f}) {
            SCOPED_TRACE(testing::Message() << nn::attention_path_name(attention) << ", " << ggml_type_name(kv_type)
                                            << ", cfg " << cfg_weight);
            T3Session whole(engine_->t3(), *backend_, options(attention, kv_type, kWholeCache));
            T3Session bucketed(engine_->t3(), *backend_, options(attention, kv_type, 64));
            const std::vector<float> expected = raw_logits(whole, text(20), kSteps, cfg_weight);
            EXPECT_EQ(whole.graphs_built(), 2); // one prefill and one decode graph
            EXPECT_EQ(raw_logits(bucketed, text(20), kSteps, cfg_weight), expected);
            EXPECT_GT(bucketed.graphs_built(), 3);
        }
}

// A q8_0 cache holds each key and value to about 1/254 of its block's largest: the logits move a
// little from the f16 cache's, not far (a wrong scale or block would move them by their own size).
TEST_F(T3SessionTest, An8BitCacheGivesLogitsNearTheF16Caches) {
    constexpr int kSteps = 80;
    T3Session f16(engine_->t3(), *backend_, options(nn::AttentionPath::flash, GGML_TYPE_F16, 64));
    T3Session q8(engine_->t3(), *backend_, options(nn::AttentionPath::flash, GGML_TYPE_Q8_0, 64));
    const std::vector<float> want = raw_logits(f16, text(20), kSteps, 0.5f);
    const std::vector<float> got = raw_logits(q8, text(20), kSteps, 0.5f);
    ASSERT_EQ(got.size(), want.size());
    double largest = 0, worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        largest = std::max(largest, double(std::abs(want[i])));
        worst = std::max(worst, double(std::abs(got[i] - want[i])));
    }
    EXPECT_GT(worst, 0.0) << "the q8_0 cache gave the f16 cache's logits: not quantised?";
    EXPECT_LT(worst, 0.005 * largest) << "largest logit " << largest;
}

// Only the CPU's single-query attention reads a q8_0 cache: the plain path says so; a name or an
// engine option that is not a cache type is refused.
TEST_F(T3SessionTest, An8BitCacheNeedsTheSingleQueryPath) {
    T3Session plain(engine_->t3(), *backend_, options(nn::AttentionPath::plain, GGML_TYPE_Q8_0, 64));
    test::expect_error([&] { raw_logits(plain, text(5), 2, 0.5f); }, "q8_0 on the single_query path");
    EXPECT_EQ(kv_cache_type("q8_0"), GGML_TYPE_Q8_0);
    EXPECT_EQ(kv_cache_type("f16"), GGML_TYPE_F16);
    EXPECT_THROW(kv_cache_type("q4_0"), InvalidArgument);
    chatterbox::RuntimeOptions q4_cache;
    q4_cache.kv_cache = GGML_TYPE_Q4_0;
    EXPECT_THROW(q4_cache.validate(engine_->options().backend), InvalidArgument);
    EXPECT_THROW(Runtime(*engine_, q4_cache), InvalidArgument);
    chatterbox::RuntimeOptions q8_cache;
    q8_cache.kv_cache = GGML_TYPE_Q8_0;
    EXPECT_NO_THROW(q8_cache.validate(engine_->options().backend));
    BackendOptions gpu;
    gpu.device = "cuda";
    test::expect_error([&] { q8_cache.validate(gpu); }, "q8_0 on the CPU");
}

TEST_F(T3SessionTest, EachBucketIsBuiltOncePerSession) {
    T3Session session(engine_->t3(), *backend_, options(nn::AttentionPath::flash, GGML_TYPE_F16, 32));
    const std::vector<int32_t> text_tokens = text(20);
    constexpr int kSteps = 100;
    raw_logits(session, text_tokens, kSteps, 0.5f);
    // Step i > 0 decodes at position prefill + i - 1 and attends to it and everything before it.
    const int prefill = prefill_length(engine_->t3().hparams(), *cond_, text_tokens);
    std::set<int> buckets;
    for (int position = prefill; position < prefill + kSteps - 1; ++position) buckets.insert((position + 32) / 32);
    EXPECT_EQ(session.graphs_built(), 1 + int(buckets.size()));
    raw_logits(session, text_tokens, kSteps, 0.5f);
    EXPECT_EQ(session.graphs_built(), 1 + int(buckets.size())) << "a repeated request rebuilt graphs";
}

TEST_F(T3SessionTest, LaterRequestsMatchAFreshSession) {
    // The decode masks keep what the previous step showed: a shorter and a longer request after a
    // long one must still see exactly their own positions.
    T3Session used(engine_->t3(), *backend_, options(nn::AttentionPath::plain, GGML_TYPE_F32, 32));
    raw_logits(used, text(30), 120, 0.5f);
    for (const int n_ids : {5, 40}) {
        T3Session fresh(engine_->t3(), *backend_, options(nn::AttentionPath::plain, GGML_TYPE_F32, 32));
        EXPECT_EQ(raw_logits(used, text(n_ids), 90, 0.5f), raw_logits(fresh, text(n_ids), 90, 0.5f)) << n_ids;
    }
}

TEST_F(T3SessionTest, IgnoreEosRunsEveryStepAndReportsWhereItWouldHaveEnded) {
    // Nearly uniform sampling (temperature 5, no min-p) that draws EOS within 40 steps for this
    // text and seed (the first of seeds 0..299 that does with torch's multinomial draw).
    SamplingParams params;
    params.seed = 279;
    params.temperature = 5;
    params.min_p = 0;
    params.cfg_weight = 0;
    params.max_new_tokens = 40;
    const int32_t eos = engine_->t3().hparams().stop_speech_token;
    T3Session session(engine_->t3(), *backend_);
    const GenerationResult ended = generate(session, *cond_, text("Hello there."), params);
    ASSERT_TRUE(ended.reached_eos()) << "seed 279 no longer draws EOS here: choose a seed that does";
    EXPECT_EQ(ended.tokens.size(), size_t(ended.eos_step) + 1);
    EXPECT_EQ(ended.tokens.back(), eos);

    params.ignore_eos = true;
    const GenerationResult full = generate(session, *cond_, text("Hello there."), params);
    EXPECT_EQ(full.tokens.size(), size_t(params.max_new_tokens));
    EXPECT_EQ(full.eos_step, ended.eos_step);
    EXPECT_EQ(std::count(full.tokens.begin(), full.tokens.end(), eos), 0);
    EXPECT_TRUE(std::equal(ended.tokens.begin(), ended.tokens.end() - 1, full.tokens.begin()))
        << "ignore_eos changed the steps before EOS";
}

TEST_F(T3SessionTest, APieceContinuesTheGeneratorThePieceBeforeLeft) {
    // One request's text pieces draw one stream, as the official single pass does after
    // torch.manual_seed: the generator a generation returns has drawn one exponential row (two words
    // per vocabulary entry) per step, and a generation handed it goes on from there.
    SamplingParams params;
    params.seed = 7;
    params.max_new_tokens = 12;
    params.ignore_eos = true; // one draw a step unless EOS is drawn (then a second)
    params.temperature = 5;
    params.min_p = 0;
    T3Session session(engine_->t3(), *backend_);
    const GenerationResult first = generate(session, *cond_, text("Hello there."), params);
    ASSERT_TRUE(first.generator);
    ASSERT_LT(first.eos_step, 0) << "seed 7 draws EOS here: the row count below assumes one draw a step";
    TorchGenerator expected(params.seed);
    std::vector<float> row(size_t(engine_->t3().hparams().speech_vocab));
    for (size_t step = 0; step < first.tokens.size(); ++step) expected.exponential(row.data(), row.size());
    TorchGenerator after_first = *first.generator;
    EXPECT_EQ(after_first.random(), expected.random());

    // Handed the generator, a generation ignores the seed and continues the stream.
    GenerationHooks continued;
    continued.generator = first.generator;
    SamplingParams other_seed = params;
    other_seed.seed = 8;
    const GenerationResult second = generate(session, *cond_, text("How are you?"), other_seed, continued);
    GenerationHooks from_seven;
    from_seven.generator = TorchGenerator(params.seed);
    EXPECT_EQ(generate(session, *cond_, text("How are you?"), other_seed, from_seven).tokens,
              generate(session, *cond_, text("How are you?"), params).tokens);
    EXPECT_NE(second.tokens, generate(session, *cond_, text("How are you?"), params).tokens);
}
