// needs: tiny-model tiny-turbo-model
// Flow batching (s3gen/flow_batch.h, EstimatorGraph over several requests) on the tiny English
// (10 CFG steps, two rows a request) and Turbo (2 mean-flow steps, one row) flows: a batched
// estimator run gives each request of a different length, at a different step, its velocity
// alone; requests that join a running batch and leave it get the mel they get alone, whatever
// their CFM step counts; a cancelled request leaves at the next step, its caller gets Cancelled and
// the others go on unchanged.

#include "core/backend.h"
#include "core/error.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/s3gen/flow_batch.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

using namespace chatterbox;
using namespace chatterbox::s3gen;

namespace {

struct TinyFlow {
    std::unique_ptr<PipelineModel> engine;
    std::unique_ptr<Backend> backend; // for the requests alone
    FlowReference reference;          // the built-in voice's

    explicit TinyFlow(const std::string &model_path) {
        PipelineModelOptions options;
        options.model_path = model_path;
        options.backend = test::test_backend_options(2); // the GPU under CHATTERBOX_TEST_BACKEND=cuda
        options.components = components(Component::flow);
        engine = std::make_unique<PipelineModel>(options);
        backend = std::make_unique<Backend>(options.backend);
        reference = engine->builtin_voice(0.5f).s3gen;
    }
    const FlowModel &model() const { return engine->flow(); }
    const FlowHParams &hp() const { return engine->flow().hparams(); }
};

// One request: its speech tokens' encoding, prompt condition and initial noise.
struct FlowRequest {
    FlowEncoding encoding;
    std::vector<float> prompt_condition, noise;
};

FlowRequest make_request(TinyFlow &f, FlowSession &session, size_t n_tokens, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> tokens(n_tokens);
    for (int32_t &t : tokens) t = int32_t(rng() % uint64_t(f.hp().vocab));
    FlowRequest r;
    r.encoding = session.encode(tokens, f.reference);
    r.prompt_condition = session.prompt_condition(f.reference, r.encoding.frames);
    r.noise = standard_normal(size_t(f.hp().mel_bins * r.encoding.frames), rng);
    return r;
}

float max_difference(const std::vector<float> &a, const std::vector<float> &b) {
    EXPECT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

// Matrix products over more columns may round apart in the last bits: measured 0 on the English
// flow, 7.7e-7 on Turbo's (its time mixer multiplies a column per row, not a single column).
constexpr float kTolerance = 1e-5f;

class FlowBatchTest : public ::testing::TestWithParam<const char *> {
  protected:
    static TinyFlow &flow() {
        static TinyFlow english(test::tiny_model_path()), turbo(test::tiny_turbo_model_path());
        return std::string(GetParam()) == "english" ? english : turbo;
    }
    // Requests of three lengths (the middle one the longest), their results alone.
    void SetUp() override {
        TinyFlow &f = flow();
        FlowSession session(f.model(), *f.backend);
        for (const auto &[tokens, seed] : {std::pair{12, 1}, std::pair{31, 2}, std::pair{20, 3}})
            requests_.push_back(make_request(f, session, size_t(tokens), uint64_t(seed)));
        for (const FlowRequest &r : requests_) alone_.push_back(session.solve(r.encoding, f.reference, r.noise));
    }
    std::vector<FlowRequest> requests_;
    std::vector<std::vector<float>> alone_;
};

TEST_P(FlowBatchTest, ABatchedEstimatorRunGivesEachRequestItsVelocityAlone) {
    TinyFlow &f = flow();
    const std::vector<float> grid = cfm_time_grid(f.hp());
    std::vector<int64_t> frames;
    std::vector<EstimatorGraph::RequestStep> steps;
    std::vector<std::vector<float>> alone;
    for (size_t i = 0; i < requests_.size(); ++i) {
        const FlowRequest &r = requests_[i];
        const size_t step = i % size_t(f.hp().cfm_steps); // each request at its own step
        frames.push_back(r.encoding.frames);
        steps.push_back({&r.noise, grid[step], grid[step + 1]});
        EstimatorGraph one(f.model().estimator(), f.hp(), *f.backend, r.encoding.frames, nn::AttentionPath::flash);
        one.set_conditioning(r.encoding.mu, r.encoding.speaker, r.prompt_condition);
        alone.push_back(one.velocity(r.noise, grid[step], grid[step + 1]));
    }
    EstimatorGraph batch(f.model().estimator(), f.hp(), *f.backend, frames, nn::AttentionPath::flash);
    EXPECT_EQ(batch.frames(), requests_[1].encoding.frames);
    for (size_t i = 0; i < requests_.size(); ++i)
        batch.set_conditioning(i, requests_[i].encoding.mu, requests_[i].encoding.speaker,
                               requests_[i].prompt_condition);
    const std::vector<std::vector<float>> batched = batch.velocities(steps);
    ASSERT_EQ(batched.size(), requests_.size());
    for (size_t i = 0; i < requests_.size(); ++i)
        EXPECT_LE(max_difference(batched[i], alone[i]), kTolerance) << "request " << i;

    EXPECT_THROW(batch.velocity(requests_[0].noise, 0, 0), Error); // which request?
    steps.pop_back();
    EXPECT_THROW(batch.velocities(steps), Error);
}

// Runs the requests through a batch of two: the second joins at the first's step 1 (from its
// observer, so deterministically), the third waits for room and takes the first one's place.
TEST_P(FlowBatchTest, RequestsJoiningAndLeavingARunningBatchGetTheirMelAlone) {
    TinyFlow &f = flow();
    FlowBatchOptions options;
    options.max_requests = 2;
    FlowBatch batch(f.model(), test::test_backend_options(0), options);
    std::vector<std::vector<float>> batched(requests_.size());
    std::vector<std::thread> threads;
    const auto submit = [&](size_t i, const CfmStepObserver &observer) {
        threads.emplace_back([&, i, observer] {
            batched[i] = batch.solve(requests_[i].encoding, requests_[i].prompt_condition, requests_[i].noise, nullptr,
                                     observer);
        });
    };
    const auto wait_until_waiting = [&](int n) {
        while (batch.counts().waiting < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    };
    std::thread first([&] {
        batched[0] = batch.solve(requests_[0].encoding, requests_[0].prompt_condition, requests_[0].noise, nullptr,
                                 [&](int step, const std::vector<float> &) {
                                     if (step != 0) return;
                                     submit(1, {});
                                     submit(2, {});
                                     wait_until_waiting(2); // both join at the next boundary, room for one
                                 });
    });
    first.join();
    for (std::thread &t : threads) t.join();
    for (size_t i = 0; i < requests_.size(); ++i)
        EXPECT_LE(max_difference(batched[i], alone_[i]), kTolerance) << "request " << i;
    const BatchCounts stats = batch.counts();
    EXPECT_EQ(stats.active, 0);
    EXPECT_EQ(stats.waiting, 0);
    EXPECT_EQ(stats.request_steps, uint64_t(3 * f.hp().cfm_steps));
    EXPECT_LT(stats.steps, stats.request_steps); // some steps ran two requests
}

// Each request solves with its own CFM step count (SynthesisParams::cfm_steps): alone, the model's
// own count asked for by number is the default exactly, and in one batch requests of 3, the
// model's and 5 steps each get their mel alone and take their own number of steps.
TEST_P(FlowBatchTest, RequestsOfDifferentStepCountsShareABatch) {
    TinyFlow &f = flow();
    const int model_steps = f.hp().cfm_steps;
    const std::vector<int> counts{3, 0, 5};
    FlowSession session(f.model(), *f.backend);
    EXPECT_THROW(session.set_cfm_steps(-1), Error);
    EXPECT_THROW(session.set_cfm_steps(kMaxCfmSteps + 1), Error);
    session.set_cfm_steps(model_steps);
    EXPECT_EQ(session.solve(requests_[1].encoding, f.reference, requests_[1].noise), alone_[1]);
    std::vector<std::vector<float>> alone;
    for (size_t i = 0; i < requests_.size(); ++i) {
        session.set_cfm_steps(counts[i]);
        int steps_taken = 0;
        alone.push_back(session.solve(requests_[i].encoding, f.reference, requests_[i].noise,
                                      [&](int, const std::vector<float> &) { ++steps_taken; }));
        EXPECT_EQ(steps_taken, cfm_steps(f.hp(), counts[i])) << "request " << i;
    }
    EXPECT_GT(max_difference(alone[0], alone_[0]), 1e-3f) << "3 steps are not the model's " << model_steps;

    FlowBatchOptions options;
    options.max_requests = 3;
    FlowBatch batch(f.model(), test::test_backend_options(0), options);
    std::vector<std::vector<float>> batched(requests_.size());
    std::vector<std::thread> threads;
    const auto solve = [&](size_t i, const CfmStepObserver &observer) {
        batched[i] = batch.solve(requests_[i].encoding, requests_[i].prompt_condition, requests_[i].noise, nullptr,
                                 observer, counts[i]);
    };
    solve(0, [&](int step, const std::vector<float> &) {
        if (step != 0) return;
        for (size_t i : {size_t(1), size_t(2)}) threads.emplace_back([&, i] { solve(i, {}); });
        while (batch.counts().waiting < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    for (std::thread &t : threads) t.join();
    for (size_t i = 0; i < requests_.size(); ++i)
        EXPECT_LE(max_difference(batched[i], alone[i]), kTolerance) << "request " << i;
    const BatchCounts stats = batch.counts();
    EXPECT_EQ(stats.request_steps, uint64_t(3 + model_steps + 5));
    EXPECT_LT(stats.steps, stats.request_steps); // the three shared steps
}

TEST_P(FlowBatchTest, ACancelledRequestLeavesAtTheNextStepAndTheOthersGoOn) {
    TinyFlow &f = flow();
    FlowBatch batch(f.model(), test::test_backend_options(0), FlowBatchOptions{});
    CancelFlag cancel;
    std::exception_ptr second_error;
    std::thread second;
    int active_after_cancel = -1;
    const int last = f.hp().cfm_steps - 1;
    const std::vector<float> first = batch.solve(
        requests_[0].encoding, requests_[0].prompt_condition, requests_[0].noise, nullptr,
        [&](int step, const std::vector<float> &) {
            if (step == 0) {
                second = std::thread([&] {
                    try {
                        batch.solve(requests_[1].encoding, requests_[1].prompt_condition, requests_[1].noise, &cancel);
                    } catch (...) {
                        second_error = std::current_exception();
                    }
                });
                while (batch.counts().waiting < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                if (last == 1) cancel.request(); // Turbo: cancelled before its first step
            } else if (step == 1 && last > 1) {
                cancel.request(); // English: after one step in the batch
            } else if (step == last) {
                active_after_cancel = batch.counts().active;
            }
        });
    second.join();
    EXPECT_LE(max_difference(first, alone_[0]), kTolerance);
    ASSERT_TRUE(second_error);
    EXPECT_THROW(std::rethrow_exception(second_error), Cancelled);
    EXPECT_EQ(active_after_cancel, 1); // the cancelled request's rows were free at once
    EXPECT_EQ(batch.counts().active, 0);
}

TEST_P(FlowBatchTest, BadRequestsAreRefusedWithoutHarmingTheBatch) {
    TinyFlow &f = flow();
    FlowBatch batch(f.model(), test::test_backend_options(0), FlowBatchOptions{});
    std::vector<float> short_noise = requests_[0].noise;
    short_noise.pop_back();
    EXPECT_THROW(batch.solve(requests_[0].encoding, requests_[0].prompt_condition, short_noise), Error);
    EXPECT_LE(max_difference(batch.solve(requests_[0].encoding, requests_[0].prompt_condition, requests_[0].noise),
                             alone_[0]),
              kTolerance);
    FlowBatchOptions none;
    none.max_requests = 0;
    EXPECT_THROW(FlowBatch(f.model(), test::test_backend_options(0), none), Error);
}

INSTANTIATE_TEST_SUITE_P(Flows, FlowBatchTest, ::testing::Values("english", "turbo"));

} // namespace
