#pragma once
// Helpers of the server's e2e tests (tests/e2e/test_server*.cpp): a server on a free loopback port,
// requests to /v1/audio/speech whole and streamed, the fixture's engine on the tiny model, and the
// decoding of PCM, base64 and server-sent events.

#include "models/chatterbox/engine.h"
#include "server/server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace chatterbox::test {

// A server on a free loopback port, serving on its own thread until destroyed.
class RunningServer {
  public:
    RunningServer(const Engine &engine, server::ServerOptions options);
    ~RunningServer();
    RunningServer(const RunningServer &) = delete;
    RunningServer &operator=(const RunningServer &) = delete;

    int port() const { return port_; }
    httplib::Client client() const; // 60 s read timeout

  private:
    server::Server server_;
    int port_ = 0;
    std::thread thread_;
};

server::ServerOptions small_server(); // one thread, a fresh voice library folder

// The tiny model (ctest fixture tiny_model) on one thread, as the server tests serve it.
std::unique_ptr<Engine> tiny_engine();

// A speech request of the built-in voice ("alloy") with a seed and a token budget.
nlohmann::json speech(const std::string &input, uint64_t seed, int max_new_tokens);
httplib::Result post(httplib::Client &client, const nlohmann::json &body, const httplib::Headers &headers = {});
// POSTs and hands the body to `receive` as it arrives (false from it drops the connection).
httplib::Result post_streaming(httplib::Client &client, const nlohmann::json &body,
                               std::function<bool(const char *, size_t)> receive);

std::vector<int16_t> pcm_samples(const std::string &bytes); // s16le
std::vector<int16_t> pcm_of(const std::vector<float> &wave);
std::string unbase64(const std::string &text);

// A text/event-stream body: each event's type, and the audio of its speech.audio.delta events.
struct SseAnswer {
    std::vector<std::string> types;
    std::string audio;
};
SseAnswer parse_sse(const std::string &body);

// The tiny model's engine, loaded once per suite.
class ServerTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite();
    static void TearDownTestSuite();

    // What a session of the engine makes of the same request (seed, max_new_tokens and speed of
    // the body), offline or streamed.
    static std::vector<float> session_wave(const nlohmann::json &body, bool stream);

    static inline std::unique_ptr<Engine> engine_;
};

} // namespace chatterbox::test
