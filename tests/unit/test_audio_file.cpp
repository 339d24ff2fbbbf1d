// Audio file reading and writing: exact integer PCM mapping against librosa's load of the golden
// reference, round trips through every written format, and the bad inputs a user can hand in.

#include "audio/audio_file.h"
#include "core/error.h"
#include "core/npy.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <sndfile.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

using namespace chatterbox;
using namespace chatterbox::audio;
using namespace chatterbox::test;

namespace {

constexpr double pi = 3.14159265358979323846;

std::vector<float> sine(size_t n, int sample_rate, double hz, double amplitude) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = float(amplitude * std::sin(2.0 * pi * hz * double(i) / sample_rate));
    return x;
}

// Writes interleaved frames with libsndfile directly (write_audio is mono only).
void write_raw(const std::string &path, const std::vector<float> &interleaved, int channels, int sample_rate,
               int format) {
    SF_INFO info{};
    info.samplerate = sample_rate;
    info.channels = channels;
    info.format = format;
    SNDFILE *file = sf_open(path.c_str(), SFM_WRITE, &info);
    ASSERT_NE(file, nullptr) << sf_strerror(nullptr);
    const sf_count_t frames = sf_count_t(interleaved.size()) / channels;
    ASSERT_EQ(sf_writef_float(file, interleaved.data(), frames), frames);
    sf_close(file);
}

double max_abs_diff(const std::vector<float> &a, const std::vector<float> &b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
    return worst;
}

} // namespace

TEST(AudioFile, ReferenceWavMatchesLibrosaLoad) {
    const AudioBuffer audio = read_audio(golden_path("ref_voice.wav"));
    const std::vector<float> expected = read_npy(golden_path("ref_wav_24k.npy")).f32();
    EXPECT_EQ(audio.sample_rate, 24000);
    ASSERT_EQ(audio.samples.size(), expected.size());
    const Diff diff = compare(audio.samples, expected);
    std::printf("ref_wav_24k: max abs error %.3g\n", diff.max_abs);
    EXPECT_TRUE(golden_tolerance("ref_wav_24k").accepts(diff, 1.0)) << diff.max_abs;
}

TEST(AudioFile, Pcm16WavRoundTripIsWithinOneStep) {
    const std::string path = temp_dir("audio") + "/sine.wav";
    const std::vector<float> x = sine(16000, 16000, 440, 0.9);
    write_audio(path, x, 16000);
    const AudioBuffer back = read_audio(path);
    EXPECT_EQ(back.sample_rate, 16000);
    ASSERT_EQ(back.samples.size(), x.size());
    // libsndfile writes x * 32767 rounded and reads n / 32768.
    EXPECT_LE(max_abs_diff(back.samples, x, x.size()), 1.0 / 32768 + 1e-7);
}

TEST(AudioFile, FloatWavRoundTripIsExact) {
    const std::string path = temp_dir("audio") + "/sine.WAV";
    const std::vector<float> x = sine(4800, 24000, 1000, 0.7);
    write_audio(path, x, 24000, {WavEncoding::float32});
    const AudioBuffer back = read_audio(path);
    EXPECT_EQ(back.sample_rate, 24000);
    EXPECT_EQ(back.samples, x);
}

TEST(AudioFile, FlacRoundTripIsWithinOneStep) {
    const std::string path = temp_dir("audio") + "/sine.flac";
    const std::vector<float> x = sine(24000, 24000, 220, 0.5);
    write_audio(path, x, 24000);
    const AudioBuffer back = read_audio(path);
    EXPECT_EQ(back.sample_rate, 24000);
    ASSERT_EQ(back.samples.size(), x.size());
    EXPECT_LE(max_abs_diff(back.samples, x, x.size()), 1.0 / 32768 + 1e-7);
}

TEST(AudioFile, LossyFormatsKeepRateLengthAndWaveform) {
    const std::string dir = temp_dir("audio");
    const std::vector<float> x = sine(24000, 24000, 440, 0.5);
    for (const std::string name : {"sine.ogg", "sine.mp3"}) {
        SCOPED_TRACE(name);
        write_audio(dir + "/" + name, x, 24000);
        const AudioBuffer back = read_audio(dir + "/" + name);
        EXPECT_EQ(back.sample_rate, 24000);
        // Codec delay and padding may add or drop up to a frame; the waveform itself must survive.
        ASSERT_NEAR(double(back.samples.size()), double(x.size()), 2048.0);
        double best = 0;
        for (int lag = -1200; lag <= 1200; lag += 1) {
            double dot = 0, ex = 0, eb = 0;
            for (size_t i = 4000; i < 20000; ++i) {
                const int64_t j = int64_t(i) + lag;
                if (j < 0 || j >= int64_t(back.samples.size())) continue;
                dot += double(x[i]) * back.samples[size_t(j)];
                ex += double(x[i]) * x[i];
                eb += double(back.samples[size_t(j)]) * back.samples[size_t(j)];
            }
            if (ex > 0 && eb > 0) best = std::max(best, dot / std::sqrt(ex * eb));
        }
        EXPECT_GT(best, 0.99);
    }
}

TEST(AudioFile, ChannelsAreAveragedInFloat) {
    const std::string path = temp_dir("audio") + "/six.wav";
    const int channels = 6;
    const std::vector<float> base = sine(800, 8000, 300, 0.8);
    std::vector<float> interleaved;
    for (float v : base)
        for (int c = 0; c < channels; ++c) interleaved.push_back(v * float(c + 1) * 0.1f - 0.05f * float(c));
    write_raw(path, interleaved, channels, 8000, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
    const AudioBuffer audio = read_audio(path);
    EXPECT_EQ(audio.sample_rate, 8000);
    ASSERT_EQ(audio.samples.size(), base.size());
    for (size_t i = 0; i < base.size(); ++i) {
        float sum = 0;
        for (int c = 0; c < channels; ++c) sum += interleaved[i * channels + size_t(c)];
        ASSERT_EQ(audio.samples[i], sum / float(channels)) << "frame " << i;
    }
}

// Found by tests/fuzz/fuzz_audio: finite samples near FLT_MAX overflowed the float channel sum to inf.
TEST(AudioFile, ChannelMeanOfHugeSamplesStaysFinite) {
    const std::string path = temp_dir("audio") + "/loud.wav";
    write_raw(path, {3e38f, 3e38f, -3e38f, -3e38f, 1.0f, 3.0f}, 2, 8000, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
    const AudioBuffer audio = read_audio(path);
    ASSERT_EQ(audio.samples.size(), 3u);
    EXPECT_EQ(audio.samples[0], 3e38f);
    EXPECT_EQ(audio.samples[1], -3e38f);
    EXPECT_EQ(audio.samples[2], 2.0f); // ordinary frames keep the float mean
}

TEST(AudioFile, ReadsSilenceShortFilesAndLowRates) {
    const std::string dir = temp_dir("audio");
    write_audio(dir + "/silent.wav", std::vector<float>(16000, 0.0f), 16000);
    const AudioBuffer silent = read_audio(dir + "/silent.wav");
    ASSERT_EQ(silent.samples.size(), 16000u);
    for (float v : silent.samples) ASSERT_EQ(v, 0.0f);

    write_audio(dir + "/one_ms.wav", sine(16, 16000, 1000, 0.5), 16000);
    const AudioBuffer one_ms = read_audio(dir + "/one_ms.wav");
    EXPECT_EQ(one_ms.samples.size(), 16u);
    EXPECT_NEAR(one_ms.seconds(), 0.001, 1e-12);

    write_audio(dir + "/low.wav", sine(8000, 8000, 100, 0.5), 8000);
    const AudioBuffer low = read_audio(dir + "/low.wav");
    EXPECT_EQ(low.sample_rate, 8000);
    EXPECT_EQ(low.samples.size(), 8000u);
}

TEST(AudioFile, RejectsFilesThatAreNotUsableAudio) {
    const std::string dir = temp_dir("audio");
    expect_error([&] { read_audio(dir + "/missing.wav"); }, "no such file");
    expect_error([&] { read_audio(dir); }, "not a regular file");

    std::ofstream(dir + "/zero.wav").close();
    expect_error([&] { read_audio(dir + "/zero.wav"); }, "empty (0 bytes)");

    std::ofstream(dir + "/notes.wav") << "These are notes, not audio. RIFF? No.\n";
    expect_error([&] { read_audio(dir + "/notes.wav"); }, "not an audio file");

    write_raw(dir + "/no_frames.wav", {}, 1, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    expect_error([&] { read_audio(dir + "/no_frames.wav"); }, "no audio samples");

    write_audio(dir + "/nan.wav", {0.0f, 0.5f}, 16000, {WavEncoding::float32});
    { // Patch a NaN into the float data (the last 4 bytes of the file).
        std::fstream patch(dir + "/nan.wav", std::ios::in | std::ios::out | std::ios::binary);
        patch.seekp(-4, std::ios::end);
        const float nan = std::nanf("");
        patch.write(reinterpret_cast<const char *>(&nan), sizeof nan);
    }
    expect_error([&] { read_audio(dir + "/nan.wav"); }, "non-finite sample");
}

TEST(AudioFile, TruncatedWavKeepsWholeFramesOrFailsInTheHeader) {
    const std::string dir = temp_dir("audio");
    const std::vector<float> x = sine(16000, 16000, 440, 0.5);
    write_audio(dir + "/full.wav", x, 16000);
    const AudioBuffer full = read_audio(dir + "/full.wav");
    const auto size = std::filesystem::file_size(dir + "/full.wav");
    ASSERT_EQ(size, 44u + 2 * x.size());

    // Cut inside the data: like soundfile, the whole frames that are present are returned.
    std::filesystem::copy_file(dir + "/full.wav", dir + "/cut_data.wav");
    std::filesystem::resize_file(dir + "/cut_data.wav", 44 + 2 * 1000 + 1);
    const AudioBuffer cut = read_audio(dir + "/cut_data.wav");
    ASSERT_EQ(cut.samples.size(), 1000u);
    EXPECT_TRUE(std::equal(cut.samples.begin(), cut.samples.end(), full.samples.begin()));

    // Cut inside the header: not a readable file.
    std::filesystem::copy_file(dir + "/full.wav", dir + "/cut_header.wav");
    std::filesystem::resize_file(dir + "/cut_header.wav", 20);
    expect_error([&] { read_audio(dir + "/cut_header.wav"); }, "not an audio file");
}

TEST(AudioFile, LengthLimitIsEnforced) {
    const std::string dir = temp_dir("audio");
    write_audio(dir + "/three_s.wav", std::vector<float>(3 * 8000, 0.1f), 8000);
    EXPECT_EQ(read_audio(dir + "/three_s.wav", {3.0}).samples.size(), 24000u);
    expect_error([&] { read_audio(dir + "/three_s.wav", {2.0}); }, "the limit is 2 s");
    expect_error([&] { read_audio(dir + "/three_s.wav", {0.0}); }, "max_seconds must be positive");

    // The default limit (10 minutes) at a tiny sample rate keeps the file small.
    write_audio(dir + "/long.wav", std::vector<float>(601 * 1000, 0.1f), 1000);
    expect_error([&] { read_audio(dir + "/long.wav"); }, "the limit is 600 s");
}

TEST(AudioFile, SampleRateLimitIsEnforcedBeforeDecoding) {
    const std::string dir = temp_dir("audio");
    write_audio(dir + "/fast.wav", std::vector<float>(500, 0.1f), 500000);
    expect_error([&] { read_audio(dir + "/fast.wav"); },
                 {dir + "/fast.wav", "sample rate of 500000 Hz; the limit is 384000 Hz"});
    ReadOptions options;
    options.max_sample_rate = 500000;
    EXPECT_EQ(read_audio(dir + "/fast.wav", options).sample_rate, 500000);
}

TEST(AudioFile, WriteClipsAndRejectsBadRequests) {
    const std::string dir = temp_dir("audio");
    write_audio(dir + "/loud.wav", {1.5f, -1.5f, 0.25f}, 16000);
    const AudioBuffer loud = read_audio(dir + "/loud.wav");
    ASSERT_EQ(loud.samples.size(), 3u);
    EXPECT_FLOAT_EQ(loud.samples[0], 32767.0f / 32768.0f); // clipped, not wrapped
    EXPECT_FLOAT_EQ(loud.samples[1], -1.0f);

    expect_error([&] { write_audio(dir + "/x.xyz", {0.1f}, 16000); }, "extension '.xyz'");
    expect_error([&] { write_audio(dir + "/x.wav", {}, 16000); }, "no samples");
    expect_error([&] { write_audio(dir + "/x.wav", {0.1f, std::nanf("")}, 16000); }, "sample 1 is not finite");
    expect_error([&] { write_audio(dir + "/x.wav", {0.1f}, 0); }, "sample rate must be positive");
    expect_error([&] { write_audio(dir + "/x.mp3", std::vector<float>(7000, 0.1f), 7000); },
                 "MP3 only supports sample rates");
    expect_error([&] { write_audio(dir + "/no/such/dir/x.wav", {0.1f}, 16000); }, "cannot create");
}

// AudioFileWriter: samples written in pieces give the bytes write_audio gives at once; the file
// appears at its path only when finished; an abandoned or failed writer leaves what was there and no
// partial file behind.
TEST(AudioFile, WriterPutsTheFileInPlaceOnlyWhenFinished) {
    namespace fs = std::filesystem;
    const std::string dir = temp_dir("audio");
    auto bytes = [](const std::string &path) {
        std::ifstream in(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    const std::vector<float> wave = sine(24000, 24000, 440.0, 0.5);
    for (const std::string ext : {".wav", ".flac"}) {
        const std::string whole = dir + "/whole" + ext, pieces = dir + "/pieces" + ext;
        write_audio(whole, wave, 24000);
        AudioFileWriter writer(pieces, 24000);
        for (size_t at = 0; at < wave.size(); at += 7001)
            writer.write(wave.data() + at, std::min<size_t>(7001, wave.size() - at));
        EXPECT_EQ(writer.samples(), wave.size());
        EXPECT_FALSE(fs::exists(pieces)) << "in place before finish()";
        writer.finish();
        EXPECT_EQ(bytes(pieces), bytes(whole)) << ext;
    }

    const std::string kept = dir + "/kept.wav";
    write_audio(kept, {0.25f, -0.25f}, 16000);
    const std::string before = bytes(kept);
    {
        AudioFileWriter abandoned(kept, 16000);
        abandoned.write(wave.data(), 100);
    }
    const float bad[] = {0.1f, std::nanf("")};
    expect_error(
        [&] {
            AudioFileWriter failing(kept, 16000);
            failing.write(wave.data(), 10);
            failing.write(bad, 2);
        },
        "sample 11 is not finite");
    expect_error([&] { AudioFileWriter(kept, 16000).finish(); }, "no samples");
    EXPECT_EQ(bytes(kept), before) << "the file that was there";
    for (const auto &entry : fs::directory_iterator(dir))
        EXPECT_EQ(entry.path().filename().string().find(".partial"), std::string::npos) << entry.path();
}
