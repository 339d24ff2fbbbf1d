// The streaming unit (models/chatterbox/streaming.*) with fake stages: the blocks emitted are the
// piece's audio, offline equals the single-window reference computation, and with stages whose
// output is local in time, streaming equals offline (the windows and cross-fades add nothing). A
// fixed flow noise is read from its first frame, and a short or bad one is an InvalidArgument.

#include "core/error.h"
#include "models/chatterbox/streaming.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace chatterbox;

namespace {

constexpr size_t kBins = 3, kRatio = 2, kSamplesPerFrame = 4;

StageGeometry fake_geometry() {
    StageGeometry g;
    g.mel_bins = kBins;
    g.token_mel_ratio = kRatio;
    g.pre_lookahead = 3;
    g.max_flow_tokens = 1500;
    g.samples_per_frame = kSamplesPerFrame;
    g.max_vocoder_frames = 3000;
    g.sample_rate = 400; // 4 samples of fade-out
    return g;
}

// A flow whose frame f depends only on its token and its noise: value = token + noise / 8 + bin.
class LocalFlow : public FlowStage {
  public:
    s3gen::Mel generate(const std::vector<int32_t> &tokens, const s3gen::FlowReference &reference,
                        std::vector<float> noise) override {
        ++calls;
        last_reference = reference;
        const size_t prompt_frames = reference.prompt_mel.size() / kBins;
        const size_t total = kRatio * (reference.prompt_tokens.size() + tokens.size());
        EXPECT_EQ(noise.size(), kBins * total);
        s3gen::Mel mel;
        mel.frames = int64_t(total - prompt_frames);
        mel.values.resize(kBins * size_t(mel.frames));
        for (size_t f = 0; f < size_t(mel.frames); ++f) {
            // Output frame f belongs to token (f + delta) / ratio of this window.
            const size_t delta = prompt_frames - kRatio * reference.prompt_tokens.size();
            const size_t token = std::min(tokens.size() - 1, (f + delta) / kRatio);
            for (size_t c = 0; c < kBins; ++c)
                mel.values[c * size_t(mel.frames) + f] =
                    float(tokens[token]) + noise[c * total + prompt_frames + f] / 8 + float(c);
        }
        return mel;
    }
    int calls = 0;
    s3gen::FlowReference last_reference;
};

// A vocoder whose samples of frame f depend only on that frame: sum of its bins, ramped.
class LocalVocoder : public VocoderStage {
  public:
    std::vector<float> synthesize(const std::vector<float> &mel, uint64_t) override {
        ++calls;
        const size_t frames = mel.size() / kBins;
        std::vector<float> wave(frames * kSamplesPerFrame);
        for (size_t f = 0; f < frames; ++f)
            for (size_t s = 0; s < kSamplesPerFrame; ++s) {
                float sum = 0;
                for (size_t c = 0; c < kBins; ++c) sum += mel[c * frames + f];
                wave[f * kSamplesPerFrame + s] = sum * float(s + 1) / 100.0f;
            }
        return wave;
    }
    int calls = 0;
};

class CollectingSink : public AudioSink {
  public:
    void emit(const float *samples, size_t n) override {
        blocks.emplace_back(samples, samples + n);
        wave.insert(wave.end(), samples, samples + n);
    }
    void progress(const char *, float fraction) override {
        EXPECT_GE(fraction, 0.0f);
        EXPECT_LE(fraction, 1.0f);
    }
    bool cancel_requested() const override { return cancel; }
    std::vector<std::vector<float>> blocks;
    std::vector<float> wave;
    bool cancel = false;
};

s3gen::FlowReference reference_with(size_t prompt_tokens, size_t prompt_frames) {
    s3gen::FlowReference reference;
    reference.prompt_tokens.assign(prompt_tokens, 7);
    reference.prompt_mel.assign(prompt_frames * kBins, 0.5f);
    reference.xvector.assign(4, 0.1f);
    return reference;
}

std::vector<int32_t> tokens_of(size_t n) {
    std::vector<int32_t> tokens(n);
    for (size_t i = 0; i < n; ++i) tokens[i] = int32_t((i * 37) % 11);
    return tokens;
}

struct PieceRun {
    std::vector<float> wave;
    size_t blocks = 0;
    int flow_calls = 0, vocoder_calls = 0;
};

PieceRun vocalize(const s3gen::FlowReference &reference, const std::vector<int32_t> &tokens, const ChunkPlan &plan,
                  const FlowNoiseBuffer *fixed_noise = nullptr) {
    LocalFlow flow;
    LocalVocoder vocoder;
    CollectingSink sink;
    PieceVocalizer piece({fake_geometry(), flow, vocoder}, sink, reference, plan, 42, 0, 1, fixed_noise);
    for (int32_t t : tokens) piece.add_token(t);
    piece.finish();
    EXPECT_EQ(piece.tokens(), tokens.size());
    return {sink.wave, sink.blocks.size(), flow.calls, vocoder.calls};
}

// The flow noise a piece of seed `seed` draws, (kBins, prompt frames + kRatio · tokens) channel-major.
std::vector<float> drawn_noise(uint64_t seed, size_t prompt_frames, size_t tokens) {
    std::mt19937_64 rng(mix_seed(seed, 1));
    const size_t frames = prompt_frames + kRatio * tokens;
    const std::vector<float> prompt_noise = s3gen::standard_normal(prompt_frames * kBins, rng);
    const std::vector<float> noise_frames = s3gen::standard_normal(kRatio * tokens * kBins, rng);
    std::vector<float> noise(kBins * frames);
    for (size_t f = 0; f < frames; ++f)
        for (size_t c = 0; c < kBins; ++c)
            noise[c * frames + f] =
                f < prompt_frames ? prompt_noise[f * kBins + c] : noise_frames[(f - prompt_frames) * kBins + c];
    return noise;
}

void expect_close(const std::vector<float> &a, const std::vector<float> &b, float tolerance) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tolerance) << "sample " << i;
}

} // namespace

TEST(Streaming, OfflineIsOneWindowOfEachStage) {
    const s3gen::FlowReference reference = reference_with(5, 10);
    const std::vector<int32_t> tokens = tokens_of(40);
    const PieceRun offline = vocalize(reference, tokens, ChunkPlan::offline());
    EXPECT_EQ(offline.flow_calls, 1);
    EXPECT_EQ(offline.vocoder_calls, 1);
    EXPECT_EQ(offline.wave.size(), kRatio * tokens.size() * kSamplesPerFrame);

    // The reference computation: the stages once over the whole piece, then the 10 ms fade-out.
    LocalFlow flow;
    LocalVocoder vocoder;
    const s3gen::Mel mel = flow.generate(tokens, reference, drawn_noise(42, 10, tokens.size()));
    std::vector<float> expected = vocoder.synthesize(mel.values, 0);
    for (size_t i = 0; i < 4; ++i) {
        const float w = 0.5f - 0.5f * std::cos(3.14159265358979f * (float(3 - i) + 0.5f) / 4.0f);
        expected[expected.size() - 4 + i] *= w;
    }
    expect_close(offline.wave, expected, 0.0f);
}

TEST(Streaming, LocalStagesStreamExactlyAsOffline) {
    for (const size_t prompt_frames : {size_t(10), size_t(11)}) { // even and odd prompt mel
        const s3gen::FlowReference reference = reference_with(5, prompt_frames);
        const std::vector<int32_t> tokens = tokens_of(137);
        const PieceRun offline = vocalize(reference, tokens, ChunkPlan::offline());
        const PieceRun streamed = vocalize(reference, tokens, ChunkPlan{});
        EXPECT_GT(streamed.flow_calls, 2);
        EXPECT_GT(streamed.vocoder_calls, 2);
        EXPECT_GT(streamed.blocks, size_t(2));
        // Overlapping windows see the same noise and the same tokens, so every cross-fade blends
        // equal values: the same audio up to float rounding.
        expect_close(streamed.wave, offline.wave, 1e-5f);
    }
}

TEST(Streaming, WindowsSeeTheLastPromptTokensWithTheirFrames) {
    s3gen::FlowReference reference = reference_with(5, 11); // odd: frame 10 follows token 4's two
    for (size_t i = 0; i < reference.prompt_mel.size(); ++i) reference.prompt_mel[i] = float(i / kBins);
    for (size_t i = 0; i < reference.prompt_tokens.size(); ++i) reference.prompt_tokens[i] = int32_t(100 + i);
    ChunkPlan plan;
    plan.prompt_tokens = 2;
    LocalFlow flow;
    LocalVocoder vocoder;
    CollectingSink sink;
    PieceVocalizer piece({fake_geometry(), flow, vocoder}, sink, reference, plan, 1, 0, 1);
    for (int32_t t : tokens_of(40)) piece.add_token(t);
    piece.finish();
    ASSERT_GT(flow.calls, 0);
    EXPECT_EQ(flow.last_reference.prompt_tokens, (std::vector<int32_t>{103, 104}));
    ASSERT_EQ(flow.last_reference.prompt_mel.size(), 5 * kBins); // frames 6 .. 10
    EXPECT_EQ(flow.last_reference.prompt_mel.front(), 6.0f);
    EXPECT_EQ(flow.last_reference.prompt_mel.back(), 10.0f);
    EXPECT_EQ(flow.last_reference.xvector, reference.xvector);

    // The speech frames keep their noise and place whatever part of the prompt the windows see.
    const PieceRun offline = vocalize(reference, tokens_of(137), ChunkPlan::offline());
    const PieceRun shortened = vocalize(reference, tokens_of(137), plan);
    expect_close(shortened.wave, offline.wave, 1e-5f);
}

TEST(Streaming, BlocksArriveAsTokensDo) {
    const s3gen::FlowReference reference = reference_with(5, 10);
    LocalFlow flow;
    LocalVocoder vocoder;
    CollectingSink sink;
    const ChunkPlan plan;
    PieceVocalizer piece({fake_geometry(), flow, vocoder}, sink, reference, plan, 1, 0, 1);
    const std::vector<int32_t> tokens = tokens_of(60);
    size_t fed = 0;
    for (; fed < tokens.size() && sink.blocks.empty(); ++fed) piece.add_token(tokens[fed]);
    // The first audio needs the first chunk plus the flow's look-ahead, nothing more.
    EXPECT_EQ(fed, size_t(plan.first_chunk_tokens + 3));
    for (; fed < tokens.size(); ++fed) piece.add_token(tokens[fed]);
    piece.finish();
    EXPECT_EQ(sink.wave.size(), kRatio * tokens.size() * kSamplesPerFrame);
}

TEST(Streaming, CancelStopsBeforeTheNextWindow) {
    const s3gen::FlowReference reference = reference_with(5, 10);
    LocalFlow flow;
    LocalVocoder vocoder;
    CollectingSink sink;
    PieceVocalizer piece({fake_geometry(), flow, vocoder}, sink, reference, ChunkPlan{}, 1, 0, 1);
    sink.cancel = true;
    const std::vector<int32_t> tokens = tokens_of(30);
    EXPECT_THROW(
        {
            for (int32_t t : tokens) piece.add_token(t);
        },
        Cancelled);
    EXPECT_EQ(flow.calls, 0);
}

TEST(Streaming, PlanAndGeometryAreChecked) {
    ChunkPlan plan;
    plan.left_context_tokens = 0;
    EXPECT_THROW(plan.validate(), InvalidArgument);
    plan = ChunkPlan{};
    plan.wave_crossfade_frames = plan.hift_context_frames + 1;
    EXPECT_THROW(plan.validate(), InvalidArgument);
    plan = ChunkPlan{};
    plan.prompt_tokens = -1;
    EXPECT_THROW(plan.validate(), InvalidArgument);
    EXPECT_NO_THROW(ChunkPlan{}.validate());

    LocalFlow flow;
    LocalVocoder vocoder;
    CollectingSink sink;
    StageGeometry small = fake_geometry();
    small.max_flow_tokens = 20; // a 5-token prompt + 12 left context + 3 look-ahead leave no room
    const s3gen::FlowReference reference = reference_with(5, 10);
    EXPECT_THROW(PieceVocalizer({small, flow, vocoder}, sink, reference, ChunkPlan{}, 1, 0, 1), Error);
}

TEST(Streaming, AFixedFlowNoiseIsReadFromItsFirstFrame) {
    const s3gen::FlowReference reference = reference_with(5, 10);
    const std::vector<int32_t> tokens = tokens_of(137);
    // The buffer of what seed 42 draws, with frames to spare: the drawn piece's audio, offline and streamed.
    const size_t frames = 10 + kRatio * tokens.size();
    const std::vector<float> exact = drawn_noise(42, 10, tokens.size());
    std::vector<float> spare(kBins * (frames + 7), 9.0f);
    for (size_t c = 0; c < kBins; ++c)
        std::copy(exact.begin() + std::ptrdiff_t(c * frames), exact.begin() + std::ptrdiff_t((c + 1) * frames),
                  spare.begin() + std::ptrdiff_t(c * (frames + 7)));
    const FlowNoiseBuffer buffer{spare.data(), kBins, frames + 7};
    const PieceRun drawn = vocalize(reference, tokens, ChunkPlan::offline());
    expect_close(vocalize(reference, tokens, ChunkPlan::offline(), &buffer).wave, drawn.wave, 0.0f);
    expect_close(vocalize(reference, tokens, ChunkPlan{}, &buffer).wave, drawn.wave, 1e-5f);
    // Another buffer, other audio.
    std::vector<float> zeros(spare.size(), 0.0f);
    const FlowNoiseBuffer silent{zeros.data(), kBins, frames + 7};
    EXPECT_NE(vocalize(reference, tokens, ChunkPlan::offline(), &silent).wave, drawn.wave);
}

TEST(Streaming, AShortOrBadFlowNoiseIsAnInvalidArgument) {
    const s3gen::FlowReference reference = reference_with(5, 10);
    const std::vector<int32_t> tokens = tokens_of(40);
    std::vector<float> values(kBins * (10 + kRatio * tokens.size() - 1), 0.25f); // one frame short
    const FlowNoiseBuffer short_buffer{values.data(), kBins, values.size() / kBins};
    const auto run = [&](const FlowNoiseBuffer &noise) { vocalize(reference, tokens, ChunkPlan::offline(), &noise); };
    EXPECT_THROW(run(short_buffer), InvalidArgument);
    test::expect_error([&] { run(short_buffer); }, "the flow noise holds 89 frames; this text piece needs more");
    const FlowNoiseBuffer other_bins{values.data(), kBins - 1, values.size() / (kBins - 1)};
    EXPECT_THROW(run(other_bins), InvalidArgument);
    test::expect_error([&] { run(other_bins); }, "the flow noise must be (3, frames)");
    values[16] = std::nanf("");
    EXPECT_THROW(run(short_buffer), InvalidArgument);
    test::expect_error([&] { run(short_buffer); }, "the flow noise has nan at (0, 16)");
}
