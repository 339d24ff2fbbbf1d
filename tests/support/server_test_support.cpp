#include "support/server_test_support.h"

#include "audio/audio_encoding.h"
#include "models/chatterbox/session.h"
#include "support/test_support.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>

namespace chatterbox::test {
namespace {

using nlohmann::json;

server::ServerOptions with_free_port(server::ServerOptions options) {
    options.port = 0;
    return options;
}

} // namespace

RunningServer::RunningServer(const Engine &engine, server::ServerOptions options)
    : server_(engine, with_free_port(options)) {
    port_ = server_.bind();
    thread_ = std::thread([this] { server_.run(); });
}

RunningServer::~RunningServer() {
    server_.stop();
    thread_.join();
}

httplib::Client RunningServer::client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(60, 0);
    return client;
}

server::ServerOptions small_server() {
    server::ServerOptions options;
    options.threads = 1;
    options.voices_dir = temp_dir("server_voices"); // not the user's library
    return options;
}

std::unique_ptr<Engine> tiny_engine() {
    EngineOptions options;
    options.model_path = tiny_model_path();
    options.backend.threads = 1;
    return std::make_unique<Engine>(options);
}

json speech(const std::string &input, uint64_t seed, int max_new_tokens) {
    return {{"model", "chatterbox"},
            {"input", input},
            {"voice", "alloy"},
            {"seed", seed},
            {"max_new_tokens", max_new_tokens}};
}

httplib::Result post(httplib::Client &client, const json &body, const httplib::Headers &headers) {
    return client.Post("/v1/audio/speech", headers, body.dump(), "application/json");
}

httplib::Result post_streaming(httplib::Client &client, const json &body,
                               std::function<bool(const char *, size_t)> receive) {
    httplib::Request request;
    request.method = "POST";
    request.path = "/v1/audio/speech";
    request.body = body.dump();
    request.set_header("Content-Type", "application/json");
    request.content_receiver = [receive](const char *data, size_t n, uint64_t, uint64_t) { return receive(data, n); };
    return client.send(request);
}

std::vector<int16_t> pcm_samples(const std::string &bytes) {
    std::vector<int16_t> out(bytes.size() / 2);
    std::memcpy(out.data(), bytes.data(), out.size() * 2);
    return out;
}

std::vector<int16_t> pcm_of(const std::vector<float> &wave) {
    std::string bytes;
    audio::append_pcm16(bytes, wave.data(), wave.size());
    return pcm_samples(bytes);
}

std::string unbase64(const std::string &text) {
    std::string out(text.size() / 4 * 3, '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(out.data()),
                                  reinterpret_cast<const unsigned char *>(text.data()), int(text.size()));
    EXPECT_GE(n, 0) << "bad base64";
    const size_t padding = text.size() - text.find_last_not_of('=') - 1;
    out.resize(size_t(std::max(n, 0)) - padding);
    return out;
}

SseAnswer parse_sse(const std::string &body) {
    SseAnswer answer;
    for (size_t at = 0; at < body.size();) {
        const size_t end = body.find("\n\n", at);
        if (end == std::string::npos) {
            ADD_FAILURE() << "an unterminated event";
            break;
        }
        const std::string event = body.substr(at, end - at);
        EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
        const json data = json::parse(event.substr(6));
        answer.types.push_back(data["type"]);
        if (answer.types.back() == "speech.audio.delta") answer.audio += unbase64(data["audio"]);
        at = end + 2;
    }
    return answer;
}

void ServerTest::SetUpTestSuite() { engine_ = tiny_engine(); }

void ServerTest::TearDownTestSuite() { engine_.reset(); }

std::vector<float> ServerTest::session_wave(const json &body, bool stream) {
    Session session(*engine_, SessionOptions{1});
    SynthesisOptions options;
    options.params.sampling.seed = body["seed"];
    options.params.sampling.max_new_tokens = body["max_new_tokens"];
    options.params.speed = body.value("speed", 1.0f);
    options.stream = stream;
    return session.synthesize(body["input"].get<std::string>(), engine_->builtin_voice(0.5f), options).wave;
}

} // namespace chatterbox::test
