// In-memory audio encoding (src/audio/audio_encoding.h): PCM16 scaling and clipping, WAV files that
// libsndfile reads back sample for sample, and FLAC that decodes to the same samples.

#include "audio/audio_encoding.h"
#include "audio/audio_file.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace chatterbox;

namespace {

audio::Audio decode(const std::string &bytes, const std::string &name) {
    const std::string path = (std::filesystem::path(test::temp_dir("audio_encoding")) / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return audio::read_audio(path);
}

TEST(AudioEncoding, Pcm16ScalesAndClips) {
    const float samples[] = {0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f};
    std::string bytes;
    audio::append_pcm16(bytes, samples, 6);
    ASSERT_EQ(bytes.size(), 12u);
    int16_t values[6];
    std::memcpy(values, bytes.data(), sizeof values);
    const int16_t expected[] = {0, 32767, -32767, 32767, -32767, 16384};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(values[i], expected[i]) << i;
}

TEST(AudioEncoding, WavAndFlacDecodeToTheSamePcm) {
    const std::vector<float> wave = test::random_values(4801, 3, -0.9f, 0.9f);
    const audio::Audio wav = decode(audio::encode_audio(wave, 24000, audio::FileFormat::wav), "a.wav");
    const audio::Audio flac = decode(audio::encode_audio(wave, 24000, audio::FileFormat::flac), "a.flac");
    EXPECT_EQ(wav.sample_rate, 24000);
    EXPECT_EQ(flac.sample_rate, 24000);
    std::string pcm;
    audio::append_pcm16(pcm, wave.data(), wave.size());
    ASSERT_EQ(wav.samples.size(), wave.size());
    ASSERT_EQ(flac.samples.size(), wave.size());
    for (size_t i = 0; i < wave.size(); ++i) {
        int16_t value;
        std::memcpy(&value, pcm.data() + 2 * i, 2);
        ASSERT_EQ(wav.samples[i], value / 32768.0f) << i;
        ASSERT_NEAR(flac.samples[i], wav.samples[i], 1.5 / 32768) << i;
    }
}

TEST(AudioEncoding, StreamingWavHeaderHasUnknownSizes) {
    const std::string header = audio::wav_header(24000, audio::kUnknownLength);
    ASSERT_EQ(header.size(), 44u);
    EXPECT_EQ(header.substr(0, 4), "RIFF");
    EXPECT_EQ(header.substr(4, 4), std::string(4, '\xFF'));
    EXPECT_EQ(header.substr(36, 4), "data");
    EXPECT_EQ(header.substr(40, 4), std::string(4, '\xFF'));
}

TEST(AudioEncoding, RefusesWhatCannotBeAFile) {
    test::expect_error([] { audio::encode_audio({}, 24000, audio::FileFormat::wav); }, "no samples");
    test::expect_error([] { audio::encode_audio({0.0f, std::nanf("")}, 24000, audio::FileFormat::flac); }, "non-finite");
}

} // namespace
