// needs: synthetic-weights
// The HiFT vocoder on the main golden case, full-size synthetic weights: f0, the NSF source (fed
// the recorded phases and noise), the raw wave (fed flow_mel and the recorded source) and the
// final wave after trim_fade, against the official implementation; the engine's draws for the
// recorded seed; then seeded determinism and input validation.

#include "core/backend.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/torch_generator.h"
#include "core/weight_store.h"
#include "models/chatterbox/hift/vocoder.h"
#include "support/golden_component.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numeric>

using namespace chatterbox;
using namespace chatterbox::hift;
using namespace chatterbox::test;

namespace {

std::vector<float> read_f32(const std::string &name) { return read_npy(golden_path(name + ".npy")).f32(); }

// 10 log10(sum ref^2 / sum (ref - actual)^2).
double snr_db(const std::vector<float> &actual, const std::vector<float> &reference) {
    double signal = 0, noise = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
        signal += double(reference[i]) * reference[i];
        const double d = double(actual[i]) - reference[i];
        noise += d * d;
    }
    return noise == 0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(signal / noise);
}

class HiftGolden : public test::GoldenComponent<VocoderModel> {
  protected:
    static void SetUpTestSuite() {
        load("s3gen.safetensors", "s3gen.", [](const WeightStore &s, Backend &b) {
            return std::make_unique<VocoderModel>(s, b, HiftHParams::standard());
        });
        vocoder_ = std::make_unique<VocoderSession>(*model_, *backend_);
        mel_ = read_f32("flow_mel");
        recorded_.phases = read_f32("hift_phase_vec");
        recorded_.noise = read_f32("hift_sine_noise");
    }
    static void TearDownTestSuite() {
        vocoder_.reset(); // its graphs use the backend
        GoldenComponent::TearDownTestSuite();
    }

    static SourceNoise draw_noise(int64_t frames) {
        TorchGenerator rng{uint64_t(frames)};
        return draw_source_noise(rng, model_->hparams().harmonics, frames * model_->hparams().samples_per_frame());
    }

    static std::unique_ptr<VocoderSession> vocoder_;
    static std::vector<float> mel_;
    static SourceNoise recorded_;
};

std::unique_ptr<VocoderSession> HiftGolden::vocoder_;
std::vector<float> HiftGolden::mel_;
SourceNoise HiftGolden::recorded_;

TEST_F(HiftGolden, F0) { expect_matches_golden(vocoder_->predict_f0(mel_), "hift_f0"); }

TEST_F(HiftGolden, SourceFromRecordedNoise) {
    // Stage isolation: the reference's f0 with the recorded draws...
    expect_matches_golden(vocoder_->source(read_f32("hift_f0"), recorded_), "hift_source");
    // ...and the engine's own f0.
    expect_matches_golden(vocoder_->source(vocoder_->predict_f0(mel_), recorded_), "hift_source");
}

TEST_F(HiftGolden, RawWave) { expect_matches_golden(vocoder_->decode(mel_, read_f32("hift_source")), "hift_wav_raw"); }

TEST_F(HiftGolden, PipelineWave) {
    std::vector<float> wave = vocoder_->decode(mel_, read_f32("hift_source"));
    apply_trim_fade(wave, vocoder_->hparams().fade_samples);
    expect_matches_golden(wave, "pipeline_wav");
    const std::vector<float> reference = read_f32("pipeline_wav");
    const double isolated = snr_db(wave, reference);

    // The whole vocoder from the mel and the recorded random draws.
    VocoderTaps taps;
    const std::vector<float> full = vocoder_->synthesize(mel_, &recorded_, 0, &taps);
    expect_matches_golden(full, "pipeline_wav");
    expect_matches_golden(taps.raw, "hift_wav_raw");
    const double end_to_end = snr_db(full, reference);
    std::printf("[hift] pipeline_wav SNR: %.1f dB (decode of hift_source), %.1f dB (synthesize from flow_mel)\n",
                isolated, end_to_end);
    EXPECT_GE(isolated, 40.0);
    EXPECT_GE(end_to_end, 40.0);
}

TEST_F(HiftGolden, SameSeedGivesIdenticalAudio) {
    const std::vector<float> a = vocoder_->synthesize(mel_, nullptr, 1234);
    const std::vector<float> b = vocoder_->synthesize(mel_, nullptr, 1234);
    const std::vector<float> c = vocoder_->synthesize(mel_, nullptr, 1235);
    ASSERT_EQ(a.size(), size_t(90 * 480));
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << "same seed, different audio";
    EXPECT_FALSE(std::equal(a.begin(), a.end(), c.begin())) << "another seed, same audio";
    EXPECT_LE(max_magnitude(a), 0.99);
    // Statistically like the reference: the recorded draws are one sample of the same distributions.
    const double rms = std::sqrt(std::inner_product(a.begin(), a.end(), a.begin(), 0.0) / double(a.size()));
    const std::vector<float> reference = read_f32("pipeline_wav");
    const double reference_rms = std::sqrt(
        std::inner_product(reference.begin(), reference.end(), reference.begin(), 0.0) / double(reference.size()));
    std::printf("[hift] seeded RMS %.4f vs reference RMS %.4f\n", rms, reference_rms);
    EXPECT_NEAR(rms, reference_rms, 0.2 * reference_rms);
}

// The golden run drew SineGen's phases and noise right after torch.manual_seed(1235): the engine's
// generator with that seed draws the recorded values bit for bit, so the stage fed its own draws is
// the stage fed the recording.
TEST_F(HiftGolden, SeedDrawsTheRecordedNoise) {
    const uint64_t recorded_seed = 1235;
    const int64_t frames = int64_t(mel_.size()) / 80;
    TorchGenerator rng(recorded_seed);
    const SourceNoise drawn =
        draw_source_noise(rng, vocoder_->hparams().harmonics, frames * vocoder_->hparams().samples_per_frame());
    EXPECT_EQ(drawn.phases, recorded_.phases);
    EXPECT_EQ(drawn.noise, recorded_.noise);
    const std::vector<float> f0 = read_f32("hift_f0");
    EXPECT_EQ(vocoder_->source(f0, drawn), vocoder_->source(f0, recorded_));
    EXPECT_EQ(vocoder_->synthesize(mel_, nullptr, recorded_seed), vocoder_->synthesize(mel_, &recorded_));
}

TEST_F(HiftGolden, ShorterMelRebuildsTheGraphs) {
    // A prefix of the mel: a new length, so new graphs; then the full length again.
    const int64_t frames = 90, short_frames = 30;
    std::vector<float> shorter;
    for (int64_t c = 0; c < 80; ++c)
        shorter.insert(shorter.end(), mel_.begin() + c * frames, mel_.begin() + c * frames + short_frames);
    const std::vector<float> f0 = vocoder_->predict_f0(shorter);
    ASSERT_EQ(f0.size(), size_t(short_frames));
    EXPECT_EQ(vocoder_->synthesize(shorter, nullptr, 7).size(), size_t(short_frames * 480));
    expect_matches_golden(vocoder_->predict_f0(mel_), "hift_f0");
}

// The golden mel in one batch graph with a longer and a shorter mel (hift/vocoder_graphs.h): padded
// to the longest and masked, it still gives the golden f0 and raw wave.
TEST_F(HiftGolden, InABatchWithLongerAndShorterMelsItGivesTheGoldenWave) {
    const int64_t frames = 90, longer_frames = 110, shorter_frames = 30;
    std::vector<float> longer, shorter;
    for (int64_t c = 0; c < 80; ++c) {
        const auto row = mel_.begin() + c * frames;
        longer.insert(longer.end(), row, row + frames);
        longer.insert(longer.end(), row, row + (longer_frames - frames)); // the row again, from its start
        shorter.insert(shorter.end(), row + 10, row + 10 + shorter_frames);
    }
    VocoderGraphs graphs(*model_, *backend_, {longer_frames, frames, shorter_frames});
    const std::vector<const std::vector<float> *> mels = {&longer, &mel_, &shorter};
    const std::vector<std::vector<float>> f0 = graphs.predict_f0(mels);
    expect_matches_golden(f0[1], "hift_f0");
    const std::vector<float> source = read_f32("hift_source");
    const std::vector<float> longer_source = vocoder_->source(f0[0], draw_noise(longer_frames));
    const std::vector<float> shorter_source = vocoder_->source(f0[2], draw_noise(shorter_frames));
    const std::vector<std::vector<float>> raw = graphs.decode(mels, {&longer_source, &source, &shorter_source});
    expect_matches_golden(raw[1], "hift_wav_raw");
    EXPECT_EQ(raw[0].size(), size_t(longer_frames * 480));
    const std::vector<float> alone = vocoder_->decode(shorter, shorter_source);
    if (testing_on_gpu()) // the same up to rounding by batch width (1e-5 on an H200)
        expect_close(raw[2], alone, "shorter wave batched", golden_tolerance("hift_wav_raw"));
    else
        EXPECT_EQ(raw[2], alone) << "the shortest differs from its wave alone";
}

TEST_F(HiftGolden, RejectsBadInput) {
    EXPECT_THROW(vocoder_->synthesize({}), Error);
    EXPECT_THROW(vocoder_->synthesize(std::vector<float>(81, 0.0f)), Error);
    std::vector<float> bad = mel_;
    bad[1234] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_THROW(vocoder_->synthesize(bad), Error);
    bad[1234] = std::numeric_limits<float>::infinity();
    EXPECT_THROW(vocoder_->predict_f0(bad), Error);
    const int64_t too_long = vocoder_->hparams().max_frames + 1;
    EXPECT_THROW(vocoder_->synthesize(std::vector<float>(size_t(80 * too_long), 0.0f)), Error);
    // Noise for another length, a source of the wrong length.
    SourceNoise short_noise = recorded_;
    short_noise.noise.resize(short_noise.noise.size() - 9);
    EXPECT_THROW(vocoder_->synthesize(mel_, &short_noise), Error);
    SourceNoise few_phases = recorded_;
    few_phases.phases.pop_back();
    EXPECT_THROW(vocoder_->synthesize(mel_, &few_phases), Error);
    EXPECT_THROW(vocoder_->decode(mel_, std::vector<float>(100, 0.0f)), Error);
}

} // namespace
