// The four feature front ends against the golden arrays of the reference pipeline (each from the
// golden input of its stage, and once chained from the reference wav file), plus silent, short and
// non-finite inputs.

#include "audio/audio_file.h"
#include "audio/features.h"
#include "audio/resample.h"
#include "core/error.h"
#include "core/npy.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace chatterbox;
using namespace chatterbox::audio;
using namespace chatterbox::test;

namespace {

std::vector<float> golden(const std::string &name) { return read_npy(golden_path(name + ".npy")).f32(); }

std::vector<float> head(const std::vector<float> &x, size_t n) {
    return std::vector<float>(x.begin(), x.begin() + std::min(n, x.size()));
}

// Compares with a golden array of the given shape (leading 1s of the reference's batch dimension dropped).
void expect_golden(const Matrix &actual, const std::string &name, int64_t rows, int64_t cols,
                   const std::string &label = "") {
    const NpyArray expected = read_npy(golden_path(name + ".npy"));
    ASSERT_EQ(expected.numel(), rows * cols) << name;
    ASSERT_EQ(actual.rows, rows) << name;
    ASSERT_EQ(actual.cols, cols) << name;
    const std::vector<float> reference = expected.f32();
    const Diff diff = compare(actual.values, reference);
    double magnitude = 0;
    for (float v : reference) magnitude = std::max(magnitude, double(std::fabs(v)));
    const Tolerance tolerance = golden_tolerance(name);
    std::printf("%s%s: max abs error %.3g at (%lld, %lld), max |ref| %.3g (tolerance %s)\n", name.c_str(),
                label.c_str(), diff.max_abs, (long long)(diff.worst_index / size_t(cols)),
                (long long)(diff.worst_index % size_t(cols)), magnitude, tolerance.str().c_str());
    EXPECT_TRUE(tolerance.accepts(diff, magnitude)) << name << label << " max abs error " << diff.max_abs;
}

bool all_finite(const Matrix &m) {
    for (float v : m.values)
        if (!std::isfinite(v)) return false;
    return true;
}

} // namespace

TEST(Features, S3GenMelMatchesGolden) {
    expect_golden(s3gen_mel(head(golden("ref_wav_24k"), 240000)), "s3gen_ref_mel_24k", 80, 350);
}

TEST(Features, S3TokenizerLogMelMatchesGolden) {
    expect_golden(s3tokenizer_log_mel(head(golden("ref_wav_16k_librosa"), 96000)), "s3tok_logmel_t3prompt", 128, 600);
    expect_golden(s3tokenizer_log_mel(golden("ref_wav_16k_torchaudio")), "s3tok_logmel_s3genprompt", 128, 700);
}

TEST(Features, TrimSilenceMatchesLibrosaTrim) {
    const std::vector<float> trimmed = trim_silence(golden("ref_wav_16k_librosa"));
    const std::vector<float> expected = golden("ve_trimmed_wav16k");
    ASSERT_EQ(trimmed.size(), expected.size());
    EXPECT_EQ(compare(trimmed, expected).max_abs, 0.0); // a slice of the same input
}

TEST(Features, NonSilentSpanIsLibrosaTrimsIndex) {
    // The Turbo set records the index librosa.effects.trim returned for its own reference.
    const std::vector<float> wav = read_npy(turbo_golden_path("ref_wav_16k_librosa.npy")).f32();
    const SampleSpan span = non_silent_span(wav);
    EXPECT_EQ(std::vector<int64_t>({span.begin, span.end}), read_npy(turbo_golden_path("ve_trim_interval.npy")).i64());
    EXPECT_EQ(trim_silence(wav).size(), size_t(span.end - span.begin));
}

TEST(Features, VoiceEncoderMelMatchesGolden) {
    expect_golden(voice_encoder_mel(golden("ref_wav_16k_librosa")), "ve_mel", 697, 40);
}

TEST(Features, CampplusFbankMatchesGolden) {
    expect_golden(campplus_fbank(golden("ref_wav_16k_torchaudio")), "campplus_fbank", 698, 80);
}

TEST(Features, ChainFromTheReferenceWavStaysWithinTolerance) {
    // The pipeline's own path: file -> both resamplers -> every front end.
    const AudioBuffer ref = read_audio(golden_path("ref_voice.wav"));
    ASSERT_EQ(ref.sample_rate, 24000);
    const std::vector<float> ref24 = head(ref.samples, 240000);
    const std::vector<float> librosa16 = resample_soxr_hq(ref.samples, 24000, 16000);
    const std::vector<float> torchaudio16 = resample_torchaudio(ref24, 24000, 16000);
    const std::string label = " (chained)";
    expect_golden(s3gen_mel(ref24), "s3gen_ref_mel_24k", 80, 350, label);
    expect_golden(s3tokenizer_log_mel(head(librosa16, 96000)), "s3tok_logmel_t3prompt", 128, 600, label);
    expect_golden(s3tokenizer_log_mel(torchaudio16), "s3tok_logmel_s3genprompt", 128, 700, label);
    expect_golden(voice_encoder_mel(librosa16), "ve_mel", 697, 40, label);
    expect_golden(campplus_fbank(torchaudio16), "campplus_fbank", 698, 80, label);
}

TEST(Features, OutputShapesFollowTheInputLength) {
    const std::vector<float> x24 = random_values(24000 + 123, 1, -0.3f, 0.3f);
    EXPECT_EQ(s3gen_mel(x24).cols, int64_t((x24.size() + 1440 - 1920) / 480 + 1));
    const std::vector<float> x16 = random_values(16000 + 77, 2, -0.3f, 0.3f);
    EXPECT_EQ(s3tokenizer_log_mel(x16).cols, int64_t(x16.size() / 160));
    EXPECT_EQ(campplus_fbank(x16).rows, int64_t(1 + (x16.size() - 400) / 160));
    EXPECT_EQ(voice_encoder_mel(x16).rows, int64_t(1 + x16.size() / 160)); // noise: nothing to trim
    EXPECT_EQ(voice_encoder_mel(x16).cols, 40);
}

TEST(Features, TrimSilenceKeepsTheLoudSpan) {
    std::vector<float> x(16000, 0.0f);
    for (size_t i = 6000; i < 9000; ++i) x[i] = (i % 2) ? 0.5f : -0.5f;
    const std::vector<float> trimmed = trim_silence(x);
    // Frames are 2048 long, centred every 512 samples: the span widens to whole frames around the burst.
    ASSERT_FALSE(trimmed.empty());
    EXPECT_LE(trimmed.size(), 3000u + 2 * 2048);
    EXPECT_GE(trimmed.size(), 3000u);
    EXPECT_EQ(trimmed.size() % 512, 0u);

    // All-zero input is not trimmed at all: every frame equals the (zero) reference, as in librosa.
    EXPECT_EQ(trim_silence(std::vector<float>(5000, 0.0f)).size(), 5000u);
    EXPECT_TRUE(trim_silence({}).empty());
}

TEST(Features, SilentInputGivesFiniteFloorValues) {
    const Matrix s3gen = s3gen_mel(std::vector<float>(24000, 0.0f));
    EXPECT_TRUE(all_finite(s3gen));
    for (float v : s3gen.values) EXPECT_FLOAT_EQ(v, std::log(1e-5f));
    const Matrix tokenizer = s3tokenizer_log_mel(std::vector<float>(16000, 0.0f));
    for (float v : tokenizer.values) EXPECT_FLOAT_EQ(v, (-10.0f + 4.0f) / 4.0f);
    const Matrix ve = voice_encoder_mel(std::vector<float>(16000, 0.0f));
    for (float v : ve.values) EXPECT_EQ(v, 0.0f);
    const Matrix fbank = campplus_fbank(std::vector<float>(16000, 0.0f));
    for (float v : fbank.values) EXPECT_EQ(v, 0.0f); // log(epsilon) everywhere, minus its own mean
}

TEST(Features, TooShortInputIsAClearError) {
    const std::vector<float> one_ms_16k = random_values(16, 3), one_ms_24k = random_values(24, 4);
    expect_error([&] { s3gen_mel(one_ms_24k); }, "too few");
    expect_error([&] { s3tokenizer_log_mel(one_ms_16k); }, "too few");
    expect_error([&] { voice_encoder_mel(one_ms_16k); }, "after trimming silence");
    expect_error([&] { campplus_fbank(one_ms_16k); }, "too few");
    expect_error([&] { campplus_fbank(random_values(399, 5)); }, "at least 400");
    EXPECT_EQ(campplus_fbank(random_values(400, 5)).rows, 1);
}

TEST(Features, NonFiniteInputIsRejected) {
    std::vector<float> x = random_values(32000, 6);
    x[1234] = std::nanf("");
    expect_error([&] { s3gen_mel(x); }, "sample 1234 is not finite");
    expect_error([&] { s3tokenizer_log_mel(x); }, "sample 1234 is not finite");
    expect_error([&] { voice_encoder_mel(x); }, "sample 1234 is not finite");
    expect_error([&] { campplus_fbank(x); }, "sample 1234 is not finite");
}
