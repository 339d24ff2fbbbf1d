#pragma once
// chatterbox-server's HTTP side: OpenAI's speech API over one PipelineModel and a SessionPool, on
// cpp-httplib.
//
//   POST /v1/audio/speech   text -> audio (wav, pcm, flac), whole or streamed (audio bytes or SSE)
//   GET  /v1/models         the one model served
//   GET  /health            alive;  GET /ready: the model is loaded and requests are served (503 draining)
//   GET  /metrics           Prometheus text format (metrics.h); no API key, like /health
//   /v1/audio/voices[/{name}], POST /v1/audio/voice-conversion: the voice library (voice_routes.h)
//
// Routes under /v1/ need "Authorization: Bearer KEY" when an API key is set. Errors are OpenAI-shaped
// JSON (api_error.h). A client that disconnects from a stream cancels its synthesis, which frees
// the session for the next request.
//
// Operations (request_watch.h): a synthesis past its deadline is cancelled (504, or an SSE error
// event); a client that hangs up cancels its synthesis within one poll and one graph node, streamed
// or not; drain() answers new API requests 503 while those in flight finish, then stops.

#include "server/metrics.h"
#include "server/request_watch.h"
#include "server/session_pool.h"
#include "server/speech_request.h"
#include "server/voice_library.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>

namespace httplib {
class Server;
}

namespace chatterbox::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;     // 0: any free port (bind() says which)
    std::string api_key; // "" : no key needed
    int sessions = 1;    // synthesis running at the same time
    int queue = 8;       // requests waiting for a session before 503
    int threads = 0;     // CPU threads per session; 0: the engine's setting
    RequestLimits limits;
    size_t max_body_bytes = 1 << 20;    // larger JSON bodies get 413
    size_t max_upload_bytes = 64 << 20; // larger multipart uploads (voices, voice conversion) get 413
    std::string voices_dir;             // the voice library's folder; "" : default_voices_dir()
    int retry_after_seconds = 1;        // told to clients turned away with 503
    double deadline_seconds = 600;      // a synthesis running longer is cancelled (504); 0: none
};

class Server {
  public:
    // Creates the sessions and opens the voice library; throws InvalidArgument for options out of
    // range, Error when the voice folder cannot be read.
    Server(Runtime &runtime, const ServerOptions &options);
    ~Server();
    Server(const Server &) = delete;
    Server &operator=(const Server &) = delete;

    // Binds host:port and returns the port; throws Error when the address cannot be bound.
    int bind();
    // Serves until stop(), on the calling thread; bind() first.
    void run();
    // From any thread, also before run() has started: stops accepting; run() returns (at once, if
    // it starts later).
    void stop();
    // From any thread: answers new API requests 503 (and /ready 503 "draining") while those in
    // flight run on; after `seconds`, or as soon as `hurry` (polled every 100 ms) says so, cancels
    // what is left; then stop(). Returns how many requests it cancelled.
    int drain(double seconds, const std::function<bool()> &hurry = {});

    RequestWatch &watch() { return watch_; }
    Metrics &metrics() { return metrics_; }

    const VoiceLibrary &voices() const { return voices_; }

    // What the Wyoming side (wyoming_server.h) shares with the HTTP side.
    const PipelineModel &engine() const { return runtime_.engine(); }
    SessionPool &pool() { return pool_; }
    const ServerOptions &options() const { return options_; }

  private:
    void add_routes();

    Runtime &runtime_;
    const PipelineModel &engine_;
    ServerOptions options_;
    SessionPool pool_;
    VoiceLibrary voices_;
    Metrics metrics_;
    RequestWatch watch_;
    std::unique_ptr<httplib::Server> http_;
    std::atomic<bool> stopping_{false}, entered_run_{false}, left_run_{false};
};

// Compares in time that depends only on the lengths, so a wrong key's timing does not reveal how
// much of it was right.
bool constant_time_equal(const std::string &a, const std::string &b);

} // namespace chatterbox::server
