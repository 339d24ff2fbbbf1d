// In-memory audio encoding (src/audio/audio_encoding.h): PCM16 scaling and clipping; every format
// decodes back (libsndfile, libavcodec: support/audio_decoding.h) to 24 kHz mono of the input's
// length within the codec's padding and the input's loudness, the lossless ones sample for sample;
// a stream yields bytes before its end and its bytes decode to the whole file's length.

#include "audio/audio_encoding.h"
#include "support/audio_decoding.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace chatterbox;
using audio::AudioFormat;

namespace {

constexpr int kRate = 24000;

// A 440 Hz tone at half scale with a little noise, so the lossy codecs have something to code.
std::vector<float> test_signal(size_t n) {
    std::vector<float> x = test::random_values(n, 11, -0.05f, 0.05f);
    for (size_t i = 0; i < n; ++i) x[i] += 0.5f * float(std::sin(2 * M_PI * 440.0 * double(i) / kRate));
    return x;
}

double rms(const std::vector<float> &x, size_t begin, size_t end) {
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += double(x[i]) * x[i];
    return std::sqrt(sum / double(end - begin));
}

bool lossless(AudioFormat format) {
    return format == AudioFormat::flac || format == AudioFormat::wav || format == AudioFormat::pcm;
}

// Encodes in chunks of awkward sizes as a stream; counts the calls that returned bytes.
struct Streamed {
    std::string bytes;
    size_t deliveries = 0; // encode() calls that returned bytes
};
Streamed encode_streamed(const std::vector<float> &x, AudioFormat format) {
    const auto encoder = audio::make_stream_encoder(format, kRate, audio::EncodedOutput::stream);
    Streamed out;
    const size_t sizes[] = {1, 37, 480, 2400, 999, 4800};
    for (size_t at = 0, k = 0; at < x.size(); ++k) {
        const size_t n = std::min(sizes[k % std::size(sizes)], x.size() - at);
        const std::string bytes = encoder->encode(x.data() + at, n);
        out.deliveries += bytes.empty() ? 0 : 1;
        out.bytes += bytes;
        at += n;
    }
    out.bytes += encoder->finish();
    return out;
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

TEST(AudioEncoding, TheFormatTableHasOpenAIsNamesAndContentTypes) {
    const std::vector<std::pair<std::string, std::string>> expected = {{"mp3", "audio/mpeg"}, {"opus", "audio/opus"},
                                                                       {"aac", "audio/aac"},  {"flac", "audio/flac"},
                                                                       {"wav", "audio/wav"},  {"pcm", "audio/pcm"}};
    ASSERT_EQ(audio::audio_formats().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        const audio::AudioFormatInfo &info = audio::audio_formats()[i];
        EXPECT_EQ(info.name, expected[i].first);
        EXPECT_EQ(info.content_type, expected[i].second);
        EXPECT_EQ(audio::find_audio_format(info.name), &audio::audio_format_info(info.format));
    }
    EXPECT_EQ(audio::find_audio_format("ogg"), nullptr);
    EXPECT_EQ(audio::audio_format_names(), "mp3, opus, aac, flac, wav or pcm");
}

TEST(AudioEncoding, EveryFormatDecodesToTheInputsRateLengthAndLoudness) {
    const std::vector<float> x = test_signal(25201);
    std::string pcm;
    audio::append_pcm16(pcm, x.data(), x.size());
    const double input_rms = rms(x, 0, x.size());
    for (const audio::AudioFormatInfo &format : audio::audio_formats()) {
        SCOPED_TRACE(format.name);
        const test::DecodedAudio decoded =
            test::decode_audio(audio::encode_audio(x, kRate, format.format), format.format);
        EXPECT_EQ(decoded.sample_rate, kRate);
        EXPECT_EQ(decoded.channels, 1);
        ASSERT_GE(decoded.samples.size(), x.size());
        EXPECT_LE(decoded.samples.size(), x.size() + test::codec_padding(format.format));
        if (lossless(format.format)) {
            // libsndfile rounds floats to FLAC's integers its own way: within one step of ours.
            const float step = format.format == AudioFormat::flac ? 1.5f / 32768 : 0.0f;
            for (size_t i = 0; i < x.size(); ++i) {
                int16_t value;
                std::memcpy(&value, pcm.data() + 2 * i, 2);
                ASSERT_NEAR(decoded.samples[i], value / 32768.0f, step) << i;
            }
        } else {
            // Past the codec's delay, the tone is there at its loudness.
            EXPECT_NEAR(rms(decoded.samples, 4096, x.size()), input_rms, 0.1 * input_rms);
        }
    }
}

TEST(AudioEncoding, MpThreeDecodesAlikeWithAnIndependentDecoder) {
    const std::vector<float> x = test_signal(24000);
    const std::string mp3 = audio::encode_audio(x, kRate, AudioFormat::mp3);
    const test::DecodedAudio mpg123 = test::decode_with_libsndfile(mp3);
    const test::DecodedAudio ffmpeg = test::decode_with_libavcodec(mp3, test::AvCodec::mp3);
    EXPECT_EQ(ffmpeg.sample_rate, kRate);
    EXPECT_EQ(ffmpeg.channels, 1);
    EXPECT_GE(ffmpeg.samples.size(), x.size());
    EXPECT_LE(ffmpeg.samples.size(), x.size() + test::codec_padding(AudioFormat::mp3));
    EXPECT_NEAR(rms(ffmpeg.samples, 4096, x.size()), rms(mpg123.samples, 4096, x.size()), 0.02);
    // Constant 64 kbit/s: at 24 kHz every frame (576 samples) is 192 bytes, so the size tells the
    // duration (a stream needs no Xing header for it).
    EXPECT_EQ(mp3.size() % 192, 0u);
    EXPECT_GE(mp3.size() / 192 * 576, x.size());
    EXPECT_LE(mp3.size() / 192 * 576, x.size() + test::codec_padding(AudioFormat::mp3));
}

TEST(AudioEncoding, AStreamYieldsBytesBeforeItsEndAndDecodesToTheWholeFilesLength) {
    const std::vector<float> x = test_signal(3 * kRate + 17); // 3 s: several FLAC blocks and Ogg pages
    for (const audio::AudioFormatInfo &format : audio::audio_formats()) {
        SCOPED_TRACE(format.name);
        const std::string whole = audio::encode_audio(x, kRate, format.format);
        const Streamed streamed = encode_streamed(x, format.format);
        EXPECT_GT(streamed.deliveries, 2u) << "the stream came out at the end only";
        const test::DecodedAudio from_whole = test::decode_audio(whole, format.format);
        const test::DecodedAudio from_stream = test::decode_audio(streamed.bytes, format.format);
        EXPECT_EQ(from_stream.sample_rate, kRate);
        EXPECT_EQ(from_stream.channels, 1);
        if (format.format == AudioFormat::mp3) {
            // The file's first frame is LAME's Info frame, written at the end (gapless playback:
            // the encoder's delay and padding); the stream, which cannot go back, leaves it silent,
            // so its decoders keep one frame, the delay and the padding.
            ASSERT_EQ(streamed.bytes.size(), whole.size());
            EXPECT_TRUE(streamed.bytes.substr(192) == whole.substr(192));
            EXPECT_GE(from_stream.samples.size(), from_whole.samples.size());
            EXPECT_LE(from_stream.samples.size(), from_whole.samples.size() + test::codec_padding(AudioFormat::mp3));
            continue;
        }
        ASSERT_EQ(from_stream.samples.size(), from_whole.samples.size());
        EXPECT_TRUE(from_stream.samples == from_whole.samples);
        // pcm and ADTS have no header to complete: the stream is the file. (Ogg streams differ in
        // their random serial numbers, WAV and FLAC in the header's length fields.)
        if (format.format == AudioFormat::pcm || format.format == AudioFormat::aac) {
            EXPECT_TRUE(streamed.bytes == whole);
        }
    }
}

TEST(AudioEncoding, StreamedHeadersSayTheLengthIsUnknown) {
    const std::string header = audio::wav_header(kRate, audio::kUnknownLength);
    ASSERT_EQ(header.size(), 44u);
    EXPECT_EQ(header.substr(0, 4), "RIFF");
    EXPECT_EQ(header.substr(4, 4), std::string(4, '\xFF'));
    EXPECT_EQ(header.substr(36, 4), "data");
    EXPECT_EQ(header.substr(40, 4), std::string(4, '\xFF'));
    const std::vector<float> x = test_signal(9000);
    EXPECT_EQ(encode_streamed(x, AudioFormat::wav).bytes.substr(0, 44), header);
    // FLAC's STREAMINFO total-samples field (36 bits from byte 21, low nibble on) is 0: unknown.
    const std::string flac = encode_streamed(x, AudioFormat::flac).bytes;
    ASSERT_GT(flac.size(), 26u);
    EXPECT_EQ(flac.substr(0, 4), "fLaC");
    EXPECT_EQ(flac[21] & 0x0F, 0);
    EXPECT_EQ(flac.substr(22, 4), std::string(4, '\0'));
    const std::string whole_flac = audio::encode_audio(x, kRate, AudioFormat::flac);
    EXPECT_NE(whole_flac.substr(21, 5), flac.substr(21, 5)) << "the whole file knows its length";
}

// A request whose speech ends at once (end-of-speech first) has no audio: the container's empty
// form, not an error. WAV is its header, Ogg Opus its two header pages, the others nothing.
TEST(AudioEncoding, NoSamplesGiveTheEmptyForm) {
    for (const audio::AudioFormatInfo &format : audio::audio_formats()) {
        SCOPED_TRACE(format.name);
        const std::string whole = audio::encode_audio({}, kRate, format.format);
        const std::string streamed = encode_streamed({}, format.format).bytes;
        EXPECT_EQ(streamed.size(), whole.size());
        if (format.format == AudioFormat::wav) {
            EXPECT_EQ(whole, audio::wav_header(kRate, 0));
            EXPECT_TRUE(test::decode_audio(whole, format.format).samples.empty());
        } else if (format.format == AudioFormat::opus) {
            EXPECT_EQ(whole.substr(0, 4), "OggS");
            EXPECT_NE(whole.find("OpusHead"), std::string::npos);
            EXPECT_NE(whole.find("OpusTags"), std::string::npos);
        } else {
            EXPECT_EQ(whole, "");
        }
    }
}

TEST(AudioEncoding, RefusesWhatCannotBeAFile) {
    test::expect_error([] { audio::encode_audio({0.0f, std::nanf("")}, kRate, AudioFormat::flac); }, "non-finite");
    test::expect_error([] { audio::encode_audio({0.0f, INFINITY}, kRate, AudioFormat::aac); }, "non-finite");
    test::expect_error([] { audio::make_stream_encoder(AudioFormat::aac, 23000, audio::EncodedOutput::stream); },
                       "cannot carry 23000 Hz");
    test::expect_error([] { audio::make_stream_encoder(AudioFormat::mp3, 0, audio::EncodedOutput::stream); },
                       "sample rate 0");
    const auto encoder = audio::make_stream_encoder(AudioFormat::opus, kRate, audio::EncodedOutput::stream);
    const float one = 0.1f;
    encoder->encode(&one, 1);
    encoder->finish();
    test::expect_error([&] { encoder->encode(&one, 1); }, "after the end");
    test::expect_error([&] { encoder->finish(); }, "finished already");
}

} // namespace
