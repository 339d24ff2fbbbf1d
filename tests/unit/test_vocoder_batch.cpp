// needs: tiny-model
// Vocoder batching (hift/vocoder_graphs.h, hift/vocoder_batch.h) on the tiny model's HiFT: one
// graph over mels of different lengths, padded and masked, gives each its f0 and wave alone;
// requests waiting together share a run, requests whose padding would cost too much do not; a
// request cancelled while it waits leaves with Cancelled; bad requests are refused on the caller's
// thread and the batch goes on.

#include "core/backend.h"
#include "core/error.h"
#include "models/chatterbox/hift/vocoder_batch.h"
#include "models/chatterbox/pipeline_model.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

using namespace chatterbox;
using namespace chatterbox::hift;

namespace {

struct TinyVocoder {
    std::unique_ptr<PipelineModel> engine;
    std::unique_ptr<Backend> backend; // for the requests alone

    TinyVocoder() {
        PipelineModelOptions options;
        options.model_path = test::tiny_model_path();
        options.backend = test::test_backend_options(2); // the GPU under CHATTERBOX_TEST_BACKEND=cuda
        options.components = components(Component::vocoder);
        engine = std::make_unique<PipelineModel>(options);
        backend = std::make_unique<Backend>(options.backend);
    }
    const VocoderModel &model() const { return engine->vocoder(); }
    const HiftHParams &hp() const { return engine->vocoder().hparams(); }
};

TinyVocoder &tiny() {
    static TinyVocoder v;
    return v;
}

// A log-mel-like (80, frames) spectrogram and the source noise of its samples.
struct MelRequest {
    std::vector<float> mel;
    SourceNoise noise;
};

MelRequest make_request(int64_t frames, uint64_t seed) {
    const HiftHParams &hp = tiny().hp();
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(-5.0f, 2.0f);
    MelRequest r;
    r.mel.resize(size_t(hp.mel_bins * frames));
    for (float &v : r.mel) v = normal(rng);
    TorchGenerator noise_rng(seed);
    r.noise = draw_source_noise(noise_rng, hp.harmonics, frames * hp.samples_per_frame());
    return r;
}

// max |a - b|, infinite for a size mismatch (test::compare).
double max_difference(const std::vector<float> &a, const std::vector<float> &b) { return test::compare(a, b).max_abs; }

// Matrix products over more columns may round apart in the last bits (measured: 0 on the tiny model).
// On a GPU, 3.6e-4 on the wave of the tiny model (an H200): its products round by batch width.
const double kTolerance = test::testing_on_gpu() ? 1e-3 : 1e-5;

class VocoderBatchTest : public ::testing::Test {
  protected:
    // Requests of three lengths (the middle one the longest), their f0 and raw wave alone.
    void SetUp() override {
        VocoderSession alone(tiny().model(), *tiny().backend);
        uint64_t seed = 1;
        for (int64_t frames : {40, 57, 52}) {
            requests_.push_back(make_request(frames, seed++));
            VocoderTaps taps;
            alone.synthesize(requests_.back().mel, &requests_.back().noise, 0, &taps);
            alone_.push_back(std::move(taps));
        }
    }
    // Each request on its own thread, started in order; their results.
    std::vector<VocoderTaps> vocode_concurrently(VocoderBatch &batch, const std::vector<size_t> &which) {
        std::vector<VocoderTaps> out(which.size());
        std::vector<std::thread> threads;
        for (size_t k = 0; k < which.size(); ++k)
            threads.emplace_back([&, k] { out[k] = batch.vocode(requests_[which[k]].mel, requests_[which[k]].noise); });
        for (std::thread &t : threads) t.join();
        return out;
    }
    // Runs a long request, and while it runs submits the others, which wait for it together.
    std::vector<VocoderTaps> vocode_behind_a_long_one(VocoderBatch &batch, const std::vector<size_t> &which) {
        const MelRequest long_one = make_request(1000, 99); // about a second on the tiny model
        std::thread first([&] { batch.vocode(long_one.mel, long_one.noise); });
        while (batch.counts().active < 1 && batch.counts().steps == 0) // in the batch, or (a failure below) done
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        std::vector<VocoderTaps> out(which.size());
        std::vector<std::thread> threads;
        for (size_t k = 0; k < which.size(); ++k)
            threads.emplace_back([&, k] { out[k] = batch.vocode(requests_[which[k]].mel, requests_[which[k]].noise); });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (batch.counts().waiting < int(which.size()) && batch.counts().steps == 0 &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        EXPECT_EQ(batch.counts().steps, 0u) << "the long request ended before the others were waiting";
        first.join();
        for (std::thread &t : threads) t.join();
        return out;
    }
    void expect_alone(const std::vector<VocoderTaps> &got, const std::vector<size_t> &which) {
        ASSERT_EQ(got.size(), which.size());
        for (size_t k = 0; k < which.size(); ++k) {
            const VocoderTaps &want = alone_[which[k]];
            EXPECT_LE(max_difference(got[k].f0, want.f0), kTolerance) << "request " << which[k];
            EXPECT_LE(max_difference(got[k].source, want.source), kTolerance) << "request " << which[k];
            EXPECT_LE(max_difference(got[k].raw, want.raw), kTolerance) << "request " << which[k];
        }
    }
    std::vector<MelRequest> requests_;
    std::vector<VocoderTaps> alone_;
};

TEST_F(VocoderBatchTest, OneGraphOverPaddedMelsGivesEachItsF0AndWaveAlone) {
    const std::vector<size_t> all = {0, 1, 2};
    std::vector<int64_t> frames;
    std::vector<const std::vector<float> *> mels;
    for (const MelRequest &r : requests_) {
        frames.push_back(int64_t(r.mel.size()) / tiny().hp().mel_bins);
        mels.push_back(&r.mel);
    }
    VocoderGraphs graphs(tiny().model(), *tiny().backend, frames);
    EXPECT_EQ(graphs.longest(), 57);
    const std::vector<std::vector<float>> f0 = graphs.predict_f0(mels);
    std::vector<const std::vector<float> *> sources;
    for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_LE(max_difference(f0[i], alone_[i].f0), kTolerance) << "request " << i;
        sources.push_back(&alone_[i].source);
    }
    const std::vector<std::vector<float>> raw = graphs.decode(mels, sources);
    for (size_t i = 0; i < all.size(); ++i) EXPECT_LE(max_difference(raw[i], alone_[i].raw), kTolerance) << i;

    // The masks matter: the same mels unmasked, as a batch of equal lengths, differ at the ends.
    std::vector<float> padded = requests_[0].mel;
    const int64_t bins = tiny().hp().mel_bins;
    std::vector<float> zero_padded(size_t(bins * 57), 0.0f);
    for (int64_t c = 0; c < bins; ++c) std::copy_n(padded.begin() + c * 40, 40, zero_padded.begin() + c * 57);
    VocoderSession plain(tiny().model(), *tiny().backend);
    const std::vector<float> unmasked = plain.predict_f0(zero_padded);
    EXPECT_GT(max_difference(std::vector<float>(unmasked.begin(), unmasked.begin() + 40), alone_[0].f0), 1e-3);

    EXPECT_THROW(graphs.predict_f0({mels[0], mels[1]}), Error); // which request?
    EXPECT_THROW(graphs.decode(mels, {sources[1], sources[0], sources[2]}), Error);
    EXPECT_THROW(VocoderGraphs(tiny().model(), *tiny().backend, {}), Error);
    EXPECT_THROW(VocoderGraphs(tiny().model(), *tiny().backend, {0}), Error);
}

TEST_F(VocoderBatchTest, RequestsWaitingTogetherShareARunAndGetTheirWaveAlone) {
    VocoderBatchOptions options;
    options.max_requests = 3;
    VocoderBatch batch(tiny().model(), test::test_backend_options(0), options);
    const std::vector<size_t> which = {0, 1, 2}; // 149 frames padded to 171: 15 % of padding
    expect_alone(vocode_behind_a_long_one(batch, which), which);
    const BatchCounts counts = batch.counts();
    EXPECT_EQ(counts.steps, 2u) << "the three waiting requests did not share one run";
    EXPECT_EQ(counts.request_steps, 4u);
    EXPECT_EQ(counts.active, 0);
    EXPECT_EQ(counts.waiting, 0);
    // Any arrival order gives the same waves.
    expect_alone(vocode_concurrently(batch, {2, 0, 1}), {2, 0, 1});
}

TEST_F(VocoderBatchTest, PaddingAndSizeLimitsSplitTheWaitingRequests) {
    VocoderBatchOptions options;
    options.max_requests = 2;   // the third waits for the next run
    options.max_padding = 0.05; // 40 and 57 frames (114 padded for 97) do not share a run
    VocoderBatch batch(tiny().model(), test::test_backend_options(0), options);
    const std::vector<size_t> which = {0, 1, 2};
    expect_alone(vocode_behind_a_long_one(batch, which), which);
    // 40 runs alone (57 would pad too much; 52 would too: 104 for 92); then 57 with 52 (114 for 109).
    EXPECT_EQ(batch.counts().steps, 3u);
    EXPECT_EQ(batch.counts().request_steps, 4u);
}

TEST_F(VocoderBatchTest, ACancelledWaitingRequestLeavesAndTheOthersGoOn) {
    VocoderBatch batch(tiny().model(), test::test_backend_options(0), VocoderBatchOptions{});
    CancelFlag cancel;
    cancel.request();
    EXPECT_THROW(batch.vocode(requests_[0].mel, requests_[0].noise, &cancel), Cancelled);
    EXPECT_EQ(batch.counts().waiting, 0);
    EXPECT_EQ(batch.counts().request_steps, 0u);
    expect_alone({batch.vocode(requests_[1].mel, requests_[1].noise)}, {1});
}

TEST_F(VocoderBatchTest, BadRequestsAreRefusedWithoutHarmingTheBatch) {
    VocoderBatch batch(tiny().model(), test::test_backend_options(0), VocoderBatchOptions{});
    SourceNoise short_noise = requests_[0].noise;
    short_noise.noise.pop_back();
    EXPECT_THROW(batch.vocode(requests_[0].mel, short_noise), Error);
    std::vector<float> ragged = requests_[0].mel;
    ragged.pop_back();
    EXPECT_THROW(batch.vocode(ragged, requests_[0].noise), Error);
    std::vector<float> not_finite = requests_[0].mel;
    not_finite[5] = std::nanf("");
    EXPECT_THROW(batch.vocode(not_finite, requests_[0].noise), Error);
    EXPECT_EQ(batch.counts().request_steps, 0u);
    expect_alone({batch.vocode(requests_[0].mel, requests_[0].noise)}, {0});

    VocoderBatchOptions bad;
    bad.max_requests = 0;
    EXPECT_THROW(VocoderBatch(tiny().model(), test::test_backend_options(0), bad), Error);
    bad = {};
    bad.max_padding = -1;
    EXPECT_THROW(VocoderBatch(tiny().model(), test::test_backend_options(0), bad), Error);
}

// A session's VocoderSession in a batch: synthesize gives its wave alone, trim_fade and taps included.
TEST_F(VocoderBatchTest, AVocoderInABatchSynthesizesAsAlone) {
    VocoderBatch batch(tiny().model(), test::test_backend_options(0), VocoderBatchOptions{});
    VocoderSession alone(tiny().model(), *tiny().backend), batched(tiny().model(), *tiny().backend, &batch);
    const std::vector<float> want = alone.synthesize(requests_[2].mel, nullptr, 7);
    VocoderTaps taps;
    EXPECT_LE(max_difference(batched.synthesize(requests_[2].mel, nullptr, 7, &taps), want), kTolerance);
    EXPECT_EQ(taps.raw.size(), want.size());
    EXPECT_EQ(batch.counts().request_steps, 1u);
}

} // namespace
