#pragma once
// chatterbox-server's tests: a server::Server served in-process on a free loopback port, and the
// PCM16 bytes of answers.

#include "audio/audio_encoding.h"
#include "server/server.h"
#include "support/test_support.h"

#include <httplib.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace chatterbox::test {

// The tiny model (ctest fixture tiny_model) on one thread, as the server tests serve it.
inline std::unique_ptr<Engine> tiny_engine() {
    EngineOptions options;
    options.model_path = tiny_model_path();
    options.backend.threads = 1;
    return std::make_unique<Engine>(options);
}

// A server on a free loopback port, serving on its own thread until destroyed.
class RunningServer {
  public:
    RunningServer(const Engine &engine, server::ServerOptions options) : server_(engine, with_free_port(options)) {
        port_ = server_.bind();
        thread_ = std::thread([this] { server_.run(); });
    }
    ~RunningServer() {
        server_.stop();
        thread_.join();
    }

    int port() const { return port_; }

    httplib::Client client() const {
        httplib::Client client("127.0.0.1", port_);
        client.set_read_timeout(60, 0);
        return client;
    }

  private:
    static server::ServerOptions with_free_port(server::ServerOptions options) {
        options.port = 0;
        return options;
    }

    server::Server server_;
    int port_ = 0;
    std::thread thread_;
};

inline std::vector<int16_t> pcm_samples(const std::string &bytes) {
    std::vector<int16_t> out(bytes.size() / 2);
    std::memcpy(out.data(), bytes.data(), out.size() * 2);
    return out;
}

// The samples a pcm answer carries for this wave.
inline std::vector<int16_t> pcm_of(const std::vector<float> &wave) {
    std::string bytes;
    audio::append_pcm16(bytes, wave.data(), wave.size());
    return pcm_samples(bytes);
}

} // namespace chatterbox::test
