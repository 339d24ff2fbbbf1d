// needs: tiny-model
// chatterbox-server's HTTP API (src/server) on the tiny model, served in-process on a free loopback
// port and called with httplib's client: whole wav/pcm/flac answers decode to the session's length;
// a streamed pcm answer and an SSE answer carry the session's streamed audio exactly; the error
// table answers OpenAI-shaped errors naming the field; the API key; a full queue answers 503 with
// Retry-After; a client that drops a stream frees the session for the next request; a port in use
// is an error, not a second server sharing it.

#include "audio/audio_encoding.h"
#include "audio/audio_file.h"
#include "server/server.h"
#include "support/server_test_support.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

using namespace chatterbox;
using nlohmann::json;

namespace {

using test::pcm_of;
using test::pcm_samples;
using test::post;
using test::post_streaming;
using test::RunningServer;
using test::small_server;
using test::speech;

audio::AudioBuffer decode_file(const std::string &bytes, const std::string &name) {
    const std::string path = (std::filesystem::path(test::temp_dir("server")) / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return audio::read_audio(path);
}

class Server : public test::ServerTest {};

TEST_F(Server, WholeAnswersDecodeToTheSessionsAudio) {
    RunningServer server(*engine_, small_server());
    httplib::Client client = server.client();
    json body = speech("Hello from the server.", 7, 30);
    const std::vector<int16_t> expected = pcm_of(session_wave(body));
    ASSERT_FALSE(expected.empty());

    body["response_format"] = "pcm";
    auto pcm = post(client, body);
    ASSERT_TRUE(pcm) << "no answer";
    ASSERT_EQ(pcm->status, 200) << pcm->body;
    EXPECT_EQ(pcm->get_header_value("Content-Type"), "audio/pcm");
    EXPECT_EQ(pcm_samples(pcm->body), expected);

    body["response_format"] = "wav";
    auto wav = post(client, body);
    ASSERT_EQ(wav->status, 200) << wav->body;
    EXPECT_EQ(wav->get_header_value("Content-Type"), "audio/wav");
    const audio::AudioBuffer wav_audio = decode_file(wav->body, "a.wav");
    EXPECT_EQ(wav_audio.sample_rate, 24000);
    ASSERT_EQ(wav_audio.samples.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(wav_audio.samples[i], expected[i] / 32768.0f) << i;

    body["response_format"] = "flac";
    auto flac = post(client, body);
    ASSERT_EQ(flac->status, 200) << flac->body;
    EXPECT_EQ(flac->get_header_value("Content-Type"), "audio/flac");
    const audio::AudioBuffer flac_audio = decode_file(flac->body, "a.flac");
    ASSERT_EQ(flac_audio.samples.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
        ASSERT_NEAR(flac_audio.samples[i], wav_audio.samples[i], 1.5 / 32768) << i;
}

TEST_F(Server, StreamsCarryTheSessionsStreamedAudio) {
    RunningServer server(*engine_, small_server());
    httplib::Client client = server.client();
    json body = speech("Streaming speech arrives in pieces.", 21, 60);
    const std::vector<int16_t> expected = pcm_of(session_wave(body));

    body["response_format"] = "pcm";
    body["stream_format"] = "audio";
    std::string streamed;
    size_t deliveries = 0;
    auto pcm = post_streaming(client, body, [&](const char *data, size_t n) {
        streamed.append(data, n);
        ++deliveries;
        return true;
    });
    ASSERT_TRUE(pcm) << "no answer";
    ASSERT_EQ(pcm->status, 200);
    EXPECT_EQ(pcm->get_header_value("Transfer-Encoding"), "chunked");
    EXPECT_EQ(pcm_samples(streamed), expected);
    EXPECT_GT(deliveries, 1u) << "the audio came in one piece";

    // The whole answer is the same audio: the server makes it in the same windows.
    body.erase("stream_format");
    auto whole = post(client, body);
    ASSERT_EQ(whole->status, 200);
    EXPECT_EQ(whole->body, streamed);

    body["response_format"] = "wav";
    body["stream_format"] = "audio";
    std::string wav;
    post_streaming(client, body, [&](const char *data, size_t n) { return wav.append(data, n), true; });
    ASSERT_GT(wav.size(), 44u);
    EXPECT_EQ(wav.substr(0, 44), audio::wav_header(24000, audio::kUnknownLength));
    EXPECT_EQ(wav.substr(44), streamed);

    body["response_format"] = "pcm";
    body["stream_format"] = "sse";
    auto sse = post(client, body);
    ASSERT_EQ(sse->status, 200);
    EXPECT_EQ(sse->get_header_value("Content-Type"), "text/event-stream");
    const test::SseAnswer answer = test::parse_sse(sse->body);
    const std::vector<std::string> &types = answer.types;
    ASSERT_GE(types.size(), 3u);
    EXPECT_EQ(types.back(), "speech.audio.done");
    EXPECT_EQ(std::count(types.begin(), types.end(), "speech.audio.delta"), std::ptrdiff_t(types.size() - 1));
    EXPECT_EQ(answer.audio, streamed);
}

// The speech guards are fields of the request, and the answer says how each text piece ended: the
// SSE done event's usage and a whole answer's header. The tiny model never ends by itself.
TEST_F(Server, GuardFieldsAndThePieceEndsOfTheAnswer) {
    RunningServer server(*engine_, small_server());
    httplib::Client client = server.client();
    json body = speech("Yes.", 3, 100); // the length bound of "Yes." is below 100 tokens
    body["response_format"] = "pcm";
    body["stream_format"] = "sse";
    auto sse = post(client, body);
    ASSERT_EQ(sse->status, 200) << sse->body;
    const size_t done = sse->body.rfind("data: ");
    ASSERT_NE(done, std::string::npos);
    const json event = json::parse(sse->body.substr(done + 6));
    ASSERT_EQ(event["type"], "speech.audio.done");
    EXPECT_EQ(event["usage"]["piece_ends"], json::array({"length_bound"}));
    EXPECT_EQ(event["usage"]["pieces_at_length_bound"], 1);
    EXPECT_EQ(event["usage"]["pieces"], 1);
    EXPECT_GT(event["usage"]["speech_tokens"].get<int>(), 0);

    body.erase("stream_format");
    auto whole = post(client, body);
    ASSERT_EQ(whole->status, 200);
    EXPECT_EQ(whole->get_header_value("X-Chatterbox-Piece-Ends"), "length_bound");
    body["length_bound"] = false;
    body["stop_guards"] = false;
    auto unbounded = post(client, body);
    ASSERT_EQ(unbounded->status, 200);
    EXPECT_EQ(unbounded->get_header_value("X-Chatterbox-Piece-Ends"), "max_tokens");
    EXPECT_GT(unbounded->body.size(), whole->body.size());

    body["alignment_guard"] = true; // the tiny T3 lacks the analyzer's heads
    auto refused = post(client, body);
    EXPECT_EQ(refused->status, 400);
    EXPECT_NE(refused->body.find("alignment_guard"), std::string::npos) << refused->body;
    body["alignment_guard"] = 1;
    EXPECT_EQ(post(client, body)->status, 400);
}

struct ErrorCase {
    std::string body;
    int status;
    std::string param;   // "" : null
    std::string message; // a fragment of it
};

TEST_F(Server, BadRequestsAreOpenAIShapedErrorsNamingTheField) {
    server::ServerOptions options = small_server();
    options.max_body_bytes = 8192;
    RunningServer server(*engine_, options);
    httplib::Client client = server.client();
    const auto with = [](const char *field, json value) {
        json body = speech("Hello.", 1, 10);
        body[field] = std::move(value);
        return body.dump();
    };
    json no_voice = speech("Hello.", 1, 10);
    no_voice.erase("voice");
    const std::vector<ErrorCase> cases = {
        {"{not json", 400, "", "not valid JSON"},
        {"[1, 2]", 400, "", "JSON object"},
        {with("input", 5), 400, "input", "must be a string"},
        {with("input", ""), 400, "input", "empty"},
        {with("input", " \n\t "), 400, "", "nothing to say"},
        {with("input", "\u200b\u2060\x07\u200f"), 400, "", "nothing to say"}, // format and control only
        {with("input", std::string(4097, 'a')), 413, "input", "limit is 4096"},
        {no_voice.dump(), 400, "voice", "required"},
        {with("voice", "nobody"), 400, "voice", "unknown"},
        {with("response_format", "au"), 400, "response_format", "unknown"},
        {with("stream_format", "video"), 400, "stream_format", "unknown"},
        {with("speed", 5), 400, "speed", "expected [0.25, 4]"},
        {with("speed", "fast"), 400, "speed", "must be a number"},
        {with("temperature", 7), 400, "temperature", "expected (0, 5]"},
        {with("temperature", "hot"), 400, "temperature", "must be a number"},
        {with("exaggeration", -1), 400, "exaggeration", "expected [0, 2]"},
        {with("max_new_tokens", 1.5), 400, "max_new_tokens", "an integer"},
        {with("max_new_tokens", 0), 400, "max_new_tokens", "expected [1, 4096]"},
        {with("seed", -1), 400, "seed", "non-negative integer"},
        {with("instructions", "cheerful"), 400, "instructions", "not supported"},
        {with("temprature", 0.5), 400, "temprature", "unknown field"},
        {std::string(9000, ' '), 413, "", "too large"},
        {std::string(4000, '[') + std::string(4000, ']'), 400, "", "JSON object"},
        {"{\"input\": \"caf\xC3\", \"voice\": \"alloy\"}", 400, "", "not valid JSON"},
    };
    for (const ErrorCase &c : cases) {
        SCOPED_TRACE(c.body.substr(0, 120));
        auto result = client.Post("/v1/audio/speech", c.body, "application/json");
        ASSERT_TRUE(result) << "no answer";
        EXPECT_EQ(result->status, c.status);
        const json error = json::parse(result->body, nullptr, false);
        ASSERT_TRUE(error.contains("error")) << result->body;
        EXPECT_TRUE(test::contains(error["error"]["message"], c.message));
        EXPECT_EQ(error["error"]["type"], "invalid_request_error");
        EXPECT_EQ(error["error"]["param"], c.param.empty() ? json(nullptr) : json(c.param));
        EXPECT_TRUE(error["error"].contains("code"));
    }
    // The server still works after all of that.
    auto good = post(client, speech("Hello.", 1, 10));
    ASSERT_TRUE(good);
    EXPECT_EQ(good->status, 200);
    auto missing = client.Get("/v1/nothing");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    EXPECT_TRUE(json::parse(missing->body).contains("error"));
}

TEST_F(Server, ApiKeyGuardsTheApiButNotHealth) {
    server::ServerOptions options = small_server();
    options.api_key = "s3cret";
    RunningServer server(*engine_, options);
    httplib::Client client = server.client();
    for (const httplib::Headers &headers : std::vector<httplib::Headers>{{},
                                                                         {{"Authorization", "Bearer wrong"}},
                                                                         {{"Authorization", "s3cret"}},
                                                                         {{"Authorization", "Bearer s3cre"}}}) {
        auto result = client.Get("/v1/models", headers);
        ASSERT_TRUE(result);
        EXPECT_EQ(result->status, 401);
        EXPECT_EQ(json::parse(result->body)["error"]["code"], "invalid_api_key");
        EXPECT_EQ(post(client, speech("Hello.", 1, 10), headers)->status, 401);
    }
    auto models = client.Get("/v1/models", httplib::Headers{{"Authorization", "Bearer s3cret"}});
    ASSERT_TRUE(models);
    ASSERT_EQ(models->status, 200);
    EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "chatterbox");
    EXPECT_EQ(client.Get("/health")->status, 200);
    EXPECT_EQ(client.Get("/ready")->status, 200);

    EXPECT_TRUE(server::constant_time_equal("abc", "abc"));
    EXPECT_FALSE(server::constant_time_equal("abc", "abd"));
    EXPECT_FALSE(server::constant_time_equal("abc", "abcd"));
    EXPECT_FALSE(server::constant_time_equal("", "a"));
}

TEST_F(Server, APortInUseIsAnError) {
    RunningServer first(*engine_, small_server());
    server::ServerOptions options = small_server();
    options.port = first.port();
    Runtime runtime(*engine_, RuntimeOptions{});
    server::Server second(runtime, options);
    test::expect_error([&] { second.bind(); }, "cannot listen on 127.0.0.1:");
}

TEST_F(Server, FullQueueAnswers503AndADroppedStreamFreesTheSession) {
    server::ServerOptions options = small_server();
    options.sessions = 1;
    options.queue = 0;
    RunningServer server(*engine_, options);

    // A long streamed request that holds the only session; it hangs up after its first audio.
    std::promise<void> first_audio, hang_up;
    std::shared_future<void> hang_up_now = hang_up.get_future().share();
    std::thread slow([&] {
        httplib::Client client = server.client();
        json body = speech("This is a long request. It has many sentences. Each one takes a while. "
                           "The server streams them one by one. Nobody will hear the end of it.",
                           3, 400);
        body["response_format"] = "pcm";
        body["stream_format"] = "audio";
        bool first = true;
        post_streaming(client, body, [&](const char *, size_t) {
            if (first) first_audio.set_value();
            first = false;
            hang_up_now.wait();
            return false;
        });
    });
    ASSERT_EQ(first_audio.get_future().wait_for(std::chrono::seconds(120)), std::future_status::ready);

    httplib::Client client = server.client();
    auto busy = post(client, speech("Hello.", 1, 10));
    ASSERT_TRUE(busy);
    EXPECT_EQ(busy->status, 503);
    EXPECT_EQ(busy->get_header_value("Retry-After"), "1");
    EXPECT_EQ(json::parse(busy->body)["error"]["code"], "server_busy");

    hang_up.set_value();
    slow.join();
    // The dropped stream is cancelled within a chunk or two: the session is soon free again.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        auto next = post(client, speech("Hello.", 1, 10));
        ASSERT_TRUE(next);
        status = next->status;
        if (status != 503) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(status, 200);
    EXPECT_EQ(json::parse(client.Get("/health")->body)["busy"], 0);
}

} // namespace
