// needs: tiny-model
// POST /v1/audio/speech in every response format and at other speeds, on the tiny model served
// in-process: each format's whole answer has its content type and decodes (libsndfile, libavcodec)
// to 24 kHz mono of the session's length within the codec's padding; streamed as audio and as SSE,
// it arrives in several pieces and decodes to the whole answer's length; `speed` time-stretches
// whole and streamed answers exactly as the session does; speech that ends at once is an empty
// answer; a bad speed is a 400 naming the field.

#include "audio/audio_encoding.h"
#include "support/audio_decoding.h"
#include "support/server_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace chatterbox;
using nlohmann::json;
using test::post;
using test::post_streaming;
using test::RunningServer;
using test::small_server;
using test::speech;

namespace {

constexpr int kRate = 24000;

class ServerFormats : public test::ServerTest {};

struct StreamedAnswer {
    int status = 0;
    std::string content_type, bytes;
    size_t deliveries = 0; // pieces the client received
};

StreamedAnswer stream(httplib::Client &client, const json &body) {
    StreamedAnswer answer;
    auto result = post_streaming(client, body, [&](const char *data, size_t n) {
        answer.bytes.append(data, n);
        ++answer.deliveries;
        return true;
    });
    EXPECT_TRUE(result) << "no answer";
    if (!result) return answer;
    answer.status = result->status;
    answer.content_type = result->get_header_value("Content-Type");
    return answer;
}

// The whole answer in `format`, expected a 200 of the format's content type.
std::string whole_answer(httplib::Client &client, json body, const audio::AudioFormatInfo &format) {
    body["response_format"] = format.name;
    body.erase("stream_format");
    auto answer = post(client, body);
    EXPECT_TRUE(answer) << "no answer";
    if (!answer) return "";
    EXPECT_EQ(answer->status, 200) << answer->body;
    EXPECT_EQ(answer->get_header_value("Content-Type"), format.content_type);
    return answer->body;
}

void expect_mono_24k(const test::DecodedAudio &decoded) {
    EXPECT_EQ(decoded.sample_rate, kRate);
    EXPECT_EQ(decoded.channels, 1);
}

TEST_F(ServerFormats, EveryFormatWholeDecodesToTheSessionsLength) {
    RunningServer server(*engine_, small_server());
    httplib::Client client = server.client();
    json body = speech("Every format says the same.", 5, 30);
    const std::vector<float> wave = session_wave(body);
    ASSERT_FALSE(wave.empty());
    for (const audio::AudioFormatInfo &format : audio::audio_formats()) {
        SCOPED_TRACE(format.name);
        const test::DecodedAudio decoded = test::decode_audio(whole_answer(client, body, format), format.format);
        expect_mono_24k(decoded);
        EXPECT_GE(decoded.samples.size(), wave.size());
        EXPECT_LE(decoded.samples.size(), wave.size() + test::codec_padding(format.format));
    }
}

TEST_F(ServerFormats, EveryFormatStreamsAsAudioAndAsSseInPieces) {
    RunningServer server(*engine_, small_server());
    httplib::Client client = server.client();
    json body = speech("Streaming every format.", 9, 30); // two chunks: 20 tokens, then the rest
    for (const audio::AudioFormatInfo &format : audio::audio_formats()) {
        SCOPED_TRACE(format.name);
        const size_t whole_length =
            test::decode_audio(whole_answer(client, body, format), format.format).samples.size();
        body["response_format"] = format.name;

        body["stream_format"] = "audio";
        const StreamedAnswer streamed = stream(client, body);
        ASSERT_EQ(streamed.status, 200) << streamed.bytes;
        EXPECT_EQ(streamed.content_type, format.content_type);
        EXPECT_GT(streamed.deliveries, 1u) << "the audio came in one piece";
        const test::DecodedAudio decoded = test::decode_audio(streamed.bytes, format.format);
        expect_mono_24k(decoded);
        // T3 does not depend on how audio is made: the streamed audio has the whole one's length;
        // a streamed mp3 keeps its first (Info) frame silent and the encoder's delay and padding.
        EXPECT_GE(decoded.samples.size(), whole_length);
        EXPECT_LE(decoded.samples.size(),
                  whole_length + (format.format == audio::AudioFormat::mp3 ? test::codec_padding(format.format) : 0));

        body["stream_format"] = "sse";
        auto sse = post(client, body);
        ASSERT_TRUE(sse) << "no answer";
        ASSERT_EQ(sse->status, 200) << sse->body;
        EXPECT_EQ(sse->get_header_value("Content-Type"), "text/event-stream");
        const test::SseAnswer events = test::parse_sse(sse->body);
        ASSERT_GE(events.types.size(), 3u);
        EXPECT_EQ(events.types.back(), "speech.audio.done");
        // The deltas carry the same encoded stream (Ogg differs in its random serial number only).
        EXPECT_TRUE(test::decode_audio(events.audio, format.format).samples == decoded.samples);
    }
}

TEST_F(ServerFormats, SpeedStretchesWholeAndStreamedAnswersAsTheSessionDoes) {
    RunningServer server(*engine_, small_server());
    httplib::Client client = server.client();
    json body = speech("Faster, then slower.", 13, 40);
    body["response_format"] = "pcm";
    const size_t normal = session_wave(body).size();

    body["speed"] = 2.0;
    auto fast = post(client, body);
    ASSERT_TRUE(fast) << "no answer";
    ASSERT_EQ(fast->status, 200) << fast->body;
    const std::vector<int16_t> fast_samples = test::pcm_samples(fast->body);
    EXPECT_EQ(fast_samples, test::pcm_of(session_wave(body)));
    EXPECT_EQ(fast_samples.size(), size_t(std::lround(normal / 2.0)));

    body["speed"] = 0.5;
    body["stream_format"] = "audio";
    const StreamedAnswer slow = stream(client, body);
    ASSERT_EQ(slow.status, 200) << slow.bytes;
    EXPECT_GT(slow.deliveries, 1u);
    const std::vector<float> slow_wave = session_wave(body);
    EXPECT_EQ(test::pcm_samples(slow.bytes), test::pcm_of(slow_wave));
    EXPECT_NEAR(double(slow_wave.size()), 2.0 * double(normal), 0.02 * normal);

    body["stream_format"] = "sse";
    auto sse = post(client, body);
    ASSERT_TRUE(sse) << "no answer";
    EXPECT_EQ(test::parse_sse(sse->body).audio, slow.bytes);

    // Another format at another speed: the stretched length within the codec's padding.
    body.erase("stream_format");
    body["speed"] = 1.25;
    body["response_format"] = "aac";
    auto aac = post(client, body);
    ASSERT_EQ(aac->status, 200) << aac->body;
    const size_t stretched = session_wave(body).size();
    const size_t decoded = test::decode_audio(aac->body, audio::AudioFormat::aac).samples.size();
    EXPECT_GE(decoded, stretched);
    EXPECT_LE(decoded, stretched + test::codec_padding(audio::AudioFormat::aac));
}

TEST_F(ServerFormats, SpeechThatEndsAtOnceIsAnEmptyAnswerNotAnError) {
    RunningServer server(*engine_, small_server());
    httplib::Client client = server.client();
    // Nearly uniform sampling, and a seed whose first exponential row (torch.multinomial draws
    // argmax(p / q)) puts at end-of-speech a q over 30 times smaller than any other token's: the
    // first token is EOS whatever the tiny model's logits (found by scanning torch.manual_seed(s);
    // torch.empty(8194).exponential_() for s < 200000).
    json body = speech("Hi.", 113046, 1);
    body["temperature"] = 5;
    body["min_p"] = 0;
    ASSERT_TRUE(session_wave(body).empty()) << "seed 113046 no longer ends at once";
    for (const audio::AudioFormatInfo &format : audio::audio_formats()) {
        SCOPED_TRACE(format.name);
        // The format's empty form (Ogg's bytes differ in their random serial number only).
        EXPECT_EQ(whole_answer(client, body, format).size(), audio::encode_audio({}, kRate, format.format).size());
    }
}

TEST_F(ServerFormats, BadSpeedOrFormatIsA400NamingTheField) {
    RunningServer server(*engine_, small_server());
    httplib::Client client = server.client();
    const std::vector<std::tuple<std::string, json, std::string>> cases = {
        {"speed", 0.2, "speed is 0.2, expected [0.25, 4]"},
        {"speed", 4.5, "speed is 4.5, expected [0.25, 4]"},
        {"speed", "fast", "'speed' must be a number"},
        {"speed", nullptr, "'speed' must be a number"},
        {"response_format", "ogg", "use mp3, opus, aac, flac, wav or pcm"},
    };
    for (const auto &[field, value, message] : cases) {
        SCOPED_TRACE(field + " = " + value.dump());
        json body = speech("Hello.", 1, 10);
        body[field] = value;
        auto result = post(client, body);
        ASSERT_TRUE(result) << "no answer";
        EXPECT_EQ(result->status, 400);
        const json error = json::parse(result->body, nullptr, false);
        ASSERT_TRUE(error.contains("error")) << result->body;
        EXPECT_EQ(error["error"]["param"], field);
        EXPECT_TRUE(test::contains(error["error"]["message"], message));
    }
}

} // namespace
