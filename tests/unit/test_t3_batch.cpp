// needs: tiny-model tiny-turbo-model
// T3 decode batched across requests (t3/batch_decoder.h, t3/batch.h), on the tiny models
// (Llama with CFG rows, GPT-2 without): sequences of different lengths that join and leave
// mid-batch get, step for step, the logits they get alone; the scheduler gives every request the
// tokens it gives alone (sampling with its own seed, guidance or not, different lengths, from many
// threads; over f16 and q8_0 caches); a newcomer prefills in parts between the others' steps, and one cancelled while
// it prefills leaves; a request whose hook stops it ends as alone and frees its rows at once, and one whose hook throws
// leaves the batch before the exception reaches the caller.

#include "core/backend.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/t3/batch.h"
#include "models/chatterbox/t3/batch_decoder.h"
#include "models/chatterbox/t3/embeddings.h"
#include "support/test_support.h"
#include "support/tiny_t3.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <thread>

using namespace chatterbox;
using namespace chatterbox::t3;

namespace {

using test::TinyT3;

RuntimeOptions runtime(nn::AttentionPath attention, ggml_type kv_type) {
    RuntimeOptions o;
    o.attention = attention;
    o.kv_type = kv_type;
    return o;
}

class T3BatchTest : public ::testing::TestWithParam<const char *> {
  protected:
    static TinyT3 &model(const std::string &name) {
        static TinyT3 llama(test::tiny_model_path()), gpt2(test::tiny_turbo_model_path());
        return name == "llama" ? llama : gpt2;
    }
    TinyT3 &t3() const { return model(GetParam()); }
};

// One request's decode, fed the same tokens alone or in a batch.
struct Sequence {
    int n_rows = 0, text_ids = 0, join_step = 0, steps = 0; // joins the batch at join_step, decodes `steps` tokens
    std::vector<float> prefill_embeds;
    int length = 0;
    std::vector<std::vector<float>> alone; // logits of each decode step, alone
};

int32_t token_of(int sequence, int step, const HParams &hp) {
    return (sequence * 53 + step * 101) % hp.speech_token_limit;
}

// Sampled tokens are the same batched as alone on the CPU only: on a GPU the logits differ by the
// rounding of kernels chosen by row count (test::testing_on_gpu()), and the tiny model's nearly flat
// distributions turn that into other draws within a few steps (seen on an H200).
constexpr const char *kTokensOnGpu = "a GPU's batch rounds otherwise than one request alone (testing_on_gpu)";

TEST_P(T3BatchTest, SequencesJoiningAndLeavingGetTheirLogitsAlone) {
    TinyT3 &m = t3();
    const bool cfg = m.hp().variant != Variant::turbo;
    for (const auto &[attention, kv_type] :
         {std::pair{nn::AttentionPath::plain, GGML_TYPE_F32}, std::pair{nn::AttentionPath::flash, GGML_TYPE_F16},
          std::pair{nn::AttentionPath::flash, GGML_TYPE_Q8_0}}) {
        if (kv_type == GGML_TYPE_Q8_0 && test::testing_on_gpu()) continue; // a CPU-only cache type
        SCOPED_TRACE(testing::Message() << nn::attention_path_name(attention) << ", " << ggml_type_name(kv_type)
                                        << " cache");
        // Different prefill lengths, rows (a guided request and one without), join steps and lengths:
        // the batch grows to four, shrinks as the short ones leave, and a newcomer takes freed rows.
        std::vector<Sequence> sequences{{cfg ? 2 : 1, 30, 0, 70},
                                        {1, 5, 0, 20},
                                        {cfg ? 2 : 1, 12, 3, 90},
                                        {1, 40, 10, 15},
                                        {cfg ? 2 : 1, 8, 30, 40}};
        for (size_t i = 0; i < sequences.size(); ++i) {
            Sequence &s = sequences[i];
            const std::vector<int32_t> ids = m.text(s.text_ids);
            s.length = prefill_length(m.hp(), m.cond, ids);
            s.prefill_embeds = prefill_embeddings(m.model(), m.cond, ids, s.n_rows);
            T3Session alone(m.model(), *m.backend, runtime(attention, kv_type));
            alone.prefill(s.prefill_embeds, s.n_rows, s.length, s.steps);
            for (int step = 0; step < s.steps; ++step)
                s.alone.push_back(
                    alone.decode(speech_token_embedding(m.model(), token_of(int(i), step, m.hp()), step + 1)));
        }
        T3BatchDecoder batch(m.model(), *m.backend, /*max_rows=*/6, /*capacity=*/1024, runtime(attention, kv_type));
        std::vector<std::unique_ptr<T3Session>> prefills;
        std::vector<int> handle(sequences.size(), -1), done(sequences.size(), 0);
        int max_in_batch = 0;
        for (int clock = 0;; ++clock) {
            for (size_t i = 0; i < sequences.size(); ++i) {
                Sequence &s = sequences[i];
                if (s.join_step != clock) continue;
                prefills.push_back(std::make_unique<T3Session>(m.model(), *m.backend, runtime(attention, kv_type)));
                prefills.back()->prefill(s.prefill_embeds, s.n_rows, s.length, s.steps);
                handle[i] = batch.join(*prefills.back(), s.length + s.steps);
            }
            std::vector<T3BatchDecoder::Step> steps;
            std::vector<size_t> which;
            for (size_t i = 0; i < sequences.size(); ++i)
                if (handle[i] >= 0) {
                    steps.push_back(
                        {handle[i], speech_token_embedding(m.model(), token_of(int(i), done[i], m.hp()), done[i] + 1)});
                    which.push_back(i);
                }
            if (steps.empty()) {
                if (clock > 40) break;
                continue;
            }
            max_in_batch = std::max(max_in_batch, batch.sequences());
            const std::vector<std::vector<float>> logits = batch.decode(steps);
            for (size_t k = 0; k < which.size(); ++k) {
                const size_t i = which[k];
                // Equal up to the rounding of kernels chosen by shape: the batch's matrix products
                // are wider (plain attention, f32 cache: measured up to 5e-7), and flash attention
                // with an f16 cache splits a row over 512+ positions between the threads, which the
                // batch's longer attended length reaches sooner (measured up to 3.5e-4 on GPT-2).
                const std::vector<float> &want = sequences[i].alone[size_t(done[i])];
                ASSERT_EQ(logits[k].size(), want.size());
                float worst = 0;
                for (size_t j = 0; j < want.size(); ++j) worst = std::max(worst, std::abs(logits[k][j] - want[j]));
                // On an H200 the batch's 4-16 rows multiply the tiny model's f32 weights in TF32: 1.2e-3.
                const float tolerance = test::testing_on_gpu()                  ? 5e-3f
                                        : attention == nn::AttentionPath::plain ? 1e-5f
                                                                                : 1e-3f;
                ASSERT_LT(worst, tolerance) << "sequence " << i << ", step " << done[i];
                if (++done[i] == sequences[i].steps) {
                    batch.leave(handle[i]);
                    handle[i] = -1;
                }
            }
        }
        for (size_t i = 0; i < sequences.size(); ++i) EXPECT_EQ(done[i], sequences[i].steps) << i;
        EXPECT_EQ(max_in_batch, 4);
        EXPECT_EQ(batch.rows_in_use(), 0);
    }
}

TEST_P(T3BatchTest, JoiningWithoutRoomOrPastTheCapacityIsAnError) {
    TinyT3 &m = t3();
    const std::vector<int32_t> ids = m.text(10);
    const int length = prefill_length(m.hp(), m.cond, ids);
    T3BatchDecoder batch(m.model(), *m.backend, /*max_rows=*/2, /*capacity=*/length + 8);
    T3Session session(m.model(), *m.backend);
    session.prefill(prefill_embeddings(m.model(), m.cond, ids, 1), 1, length, 8);
    EXPECT_THROW(batch.join(session, length + 9), Error);
    batch.join(session, length + 8);
    batch.join(session, length + 8);
    EXPECT_THROW(batch.join(session, length + 8), Error);
    T3Session empty(m.model(), *m.backend);
    EXPECT_THROW(batch.join(empty, 10), Error);
}

// Sampled generation: each request's own seed, length, guidance.
struct RequestSpec {
    int text_ids;
    uint64_t seed;
    int max_new_tokens;
    float cfg_weight;
};

SamplingParams sampling(const RequestSpec &r) {
    SamplingParams p;
    p.seed = r.seed;
    p.max_new_tokens = r.max_new_tokens;
    p.cfg_weight = r.cfg_weight;
    p.temperature = 1.5f; // varied tokens, EOS rare
    return p;
}

TEST_P(T3BatchTest, ScheduledRequestsGetTheTokensTheyGetAlone) {
    if (test::testing_on_gpu()) GTEST_SKIP() << kTokensOnGpu;
    TinyT3 &m = t3();
    for (const ggml_type kv_type : {GGML_TYPE_F16, GGML_TYPE_Q8_0}) {
        SCOPED_TRACE(ggml_type_name(kv_type));
        const RuntimeOptions cache = runtime(nn::AttentionPath::flash, kv_type);
        const std::vector<RequestSpec> specs{{20, 1, 60, 0.5f}, {6, 2, 25, 0.0f}, {33, 3, 90, 0.5f},
                                             {12, 4, 40, 0.5f}, {3, 5, 70, 0.0f}, {25, 6, 15, 0.5f}};
        std::vector<GenerationResult> alone;
        for (const RequestSpec &r : specs) {
            T3Session session(m.model(), *m.backend, cache);
            alone.push_back(generate(session, m.cond, m.text(r.text_ids), sampling(r)));
        }
        BatchOptions options;
        options.max_sequences = 3; // fewer than the requests: some wait for room
        options.capacity = 1024;
        options.runtime = cache;
        T3Batch scheduler(m.model(), m.engine->options().backend, options);
        // Each request has its own backend, as a PipelineSession has. All are built, and every
        // request's thread is running, before any request is submitted; then all are submitted at once:
        // on a loaded machine, starting them one by one could let each finish before the next came.
        std::vector<std::unique_ptr<Backend>> backends;
        std::vector<std::unique_ptr<T3Session>> sessions;
        for (size_t i = 0; i < specs.size(); ++i) {
            backends.push_back(std::make_unique<Backend>(m.engine->options().backend));
            sessions.push_back(std::make_unique<T3Session>(m.model(), *backends.back(), cache));
        }
        std::vector<std::promise<void>> started(specs.size());
        std::promise<void> submit;
        const std::shared_future<void> submitting = submit.get_future().share();
        std::vector<std::future<GenerationResult>> batched;
        for (size_t i = 0; i < specs.size(); ++i)
            batched.push_back(std::async(std::launch::async, [&, i, r = specs[i], &session = *sessions[i]] {
                started[i].set_value();
                submitting.wait();
                std::vector<int32_t> seen;
                GenerationHooks hooks;
                hooks.step_logits = false;
                hooks.on_step = [&](const StepRecord &step) {
                    EXPECT_EQ(step.raw, nullptr);
                    EXPECT_EQ(step.step, int(seen.size()));
                    seen.push_back(step.token);
                    return true;
                };
                GenerationResult result = scheduler.generate(session, m.cond, m.text(r.text_ids), sampling(r), hooks);
                EXPECT_EQ(seen, result.tokens) << "the hook saw every token, in order";
                return result;
            }));
        for (std::promise<void> &thread : started) thread.get_future().wait();
        submit.set_value();
        for (size_t i = 0; i < specs.size(); ++i) {
            const GenerationResult result = batched[i].get();
            EXPECT_EQ(result.tokens, alone[i].tokens) << "request " << i;
            EXPECT_EQ(result.end, alone[i].end) << "request " << i;
            EXPECT_EQ(result.eos_step, alone[i].eos_step) << "request " << i;
        }
        const BatchCounts stats = scheduler.counts();
        EXPECT_EQ(stats.active, 0);
        EXPECT_GT(stats.request_steps, stats.steps) << "no step decoded more than one request";
    }
}

TEST_P(T3BatchTest, AStoppedRequestEndsAsAloneAndFreesItsRowsAtOnce) {
    TinyT3 &m = t3();
    const RequestSpec spec{15, 7, 200, 0.5f}, next{10, 8, 30, 0.5f};
    constexpr int kStopAt = 9;
    GenerationHooks hooks;
    hooks.on_step = [](const StepRecord &step) { return step.step < kStopAt; };
    T3Session session(m.model(), *m.backend);
    const GenerationResult alone = generate(session, m.cond, m.text(spec.text_ids), sampling(spec), hooks);
    ASSERT_EQ(alone.end, PieceEnd::stopped);
    ASSERT_EQ(alone.tokens.size(), size_t(kStopAt) + 1);

    BatchOptions options;
    options.max_sequences = 1; // the next request waits for the stopped one's rows
    T3Batch scheduler(m.model(), m.engine->options().backend, options);
    // Read from the hook at step 1: the request is in the batch until its hook says stop (step 9),
    // so the count is seen however fast the tiny model decodes (polling could miss the whole run).
    std::promise<int> active_at_step_1;
    GenerationHooks batched = hooks;
    batched.on_step = [&](const StepRecord &step) {
        if (step.step == 1) active_at_step_1.set_value(scheduler.counts().active);
        return step.step < kStopAt;
    };
    std::future<GenerationResult> stopped = std::async(std::launch::async, [&] {
        return scheduler.generate(session, m.cond, m.text(spec.text_ids), sampling(spec), batched);
    });
    ASSERT_EQ(active_at_step_1.get_future().get(), 1);
    std::future<GenerationResult> waiting = std::async(std::launch::async, [&] {
        Backend backend(m.engine->options().backend);
        T3Session s(m.model(), backend);
        return scheduler.generate(s, m.cond, m.text(next.text_ids), sampling(next));
    });
    const GenerationResult result = stopped.get();
    EXPECT_EQ(result.tokens, alone.tokens);
    EXPECT_EQ(result.end, PieceEnd::stopped);
    const GenerationResult after = waiting.get();
    // The stopped request decoded some steps past its stop at most (its hook runs on its own thread,
    // which a loaded machine may keep waiting while the batch steps on), far from its 200: then the
    // waiting one took the rows.
    const BatchCounts stats = scheduler.counts();
    EXPECT_LE(stats.steps, uint64_t(kStopAt + 60) + after.tokens.size());
    EXPECT_EQ(stats.active, 0);
}

TEST_P(T3BatchTest, AHookThatThrowsLeavesTheBatchBeforeTheCallRethrows) {
    TinyT3 &m = t3();
    BatchOptions options;
    options.max_sequences = 2;
    T3Batch scheduler(m.model(), m.engine->options().backend, options);
    GenerationHooks hooks;
    hooks.on_step = [](const StepRecord &step) {
        if (step.step == 5) throw Cancelled("stop here");
        return true;
    };
    T3Session session(m.model(), *m.backend);
    EXPECT_THROW(scheduler.generate(session, m.cond, m.text(12), sampling({12, 9, 200, 0.5f}), hooks), Cancelled);
    EXPECT_EQ(scheduler.counts().active, 0);
    const GenerationResult after = scheduler.generate(session, m.cond, m.text(12), sampling({12, 9, 20, 0.5f}));
    EXPECT_EQ(after.tokens.size(), size_t(20));
}

// A newcomer prefills in parts of a full step's rows, one part between two of the others' steps,
// and takes the tokens it takes alone; one cancelled while it prefills leaves, and the others go on.
TEST_P(T3BatchTest, ANewcomerPrefillsInPartsBetweenTheOthersSteps) {
    if (test::testing_on_gpu()) GTEST_SKIP() << kTokensOnGpu;
    TinyT3 &m = t3();
    const RequestSpec newcomer{18, 11, 30, 0.5f};
    const int n_rows = m.hp().variant == Variant::turbo ? 1 : 2;
    const std::vector<int32_t> newcomer_text = m.text(newcomer.text_ids);
    T3Session alone_session(m.model(), *m.backend);
    const GenerationResult alone = generate(alone_session, m.cond, newcomer_text, sampling(newcomer));

    BatchOptions options;
    options.max_sequences = 2;
    T3Batch scheduler(m.model(), m.engine->options().backend, options);
    const int part = 2 * options.max_sequences / n_rows;
    const int parts = (prefill_length(m.hp(), m.cond, newcomer_text) + part - 1) / part;
    // The running request: long enough to decode through the newcomer's whole prefill, whatever the
    // delay of its hook (which starts the newcomer), as each round runs one part and one step.
    const int running_steps = 400 + parts;
    GenerationHooks running_hooks;
    for (int i = 0; i < running_steps; ++i) running_hooks.forced_tokens.push_back(token_of(1, i, m.hp()));
    running_hooks.step_logits = false;
    std::promise<void> running_started;
    running_hooks.on_step = [&](const StepRecord &step) {
        if (step.step == 1) running_started.set_value();
        return true;
    };
    SamplingParams running_params = sampling({10, 1, running_steps, 0.5f});
    std::future<GenerationResult> running = std::async(std::launch::async, [&] {
        Backend backend(m.engine->options().backend);
        T3Session s(m.model(), backend);
        return scheduler.generate(s, m.cond, m.text(10), running_params, running_hooks);
    });
    running_started.get_future().wait();
    EXPECT_EQ(scheduler.prefill_parts(), 1u) << "alone in the batch, the running request prefilled at once";

    CancelFlag cancel;
    cancel.request();
    T3Session cancelled(m.model(), *m.backend);
    EXPECT_THROW(scheduler.generate(cancelled, m.cond, newcomer_text, sampling(newcomer), {}, nullptr, &cancel),
                 Cancelled);
    EXPECT_EQ(scheduler.counts().waiting, 0);
    const uint64_t before = scheduler.prefill_parts();

    Backend backend(m.engine->options().backend);
    T3Session session(m.model(), backend);
    const GenerationResult joined = scheduler.generate(session, m.cond, newcomer_text, sampling(newcomer));
    EXPECT_EQ(joined.tokens, alone.tokens);
    EXPECT_EQ(scheduler.prefill_parts() - before, uint64_t(parts)) << "parts of " << part << " positions";
    EXPECT_EQ(running.get().tokens.size(), size_t(running_steps)) << "the running request went on to its end";
    const BatchCounts stats = scheduler.counts();
    EXPECT_EQ(stats.steps, uint64_t(running_steps - 1)) << "a step for every token after the prefill's";
    EXPECT_EQ(stats.active, 0);
}

INSTANTIATE_TEST_SUITE_P(Backbones, T3BatchTest, ::testing::Values("llama", "gpt2"));

} // namespace
