#pragma once
// Helpers of the server's e2e tests (tests/e2e/test_server*.cpp): a server in-process on a free
// loopback port or the real chatterbox-server executable as a child process, requests to
// /v1/audio/speech whole, streamed or held open, the fixture's engine on the tiny model, the decoding
// of PCM, base64 and server-sent events, and reading /metrics (samples, and a check by promtool,
// Prometheus's own parser).

#include "models/chatterbox/pipeline_model.h"
#include "server/server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace chatterbox::test {

// A server on a free loopback port, serving on its own thread until destroyed; its sessions share
// no batch.
class RunningServer {
  public:
    RunningServer(const PipelineModel &engine, server::ServerOptions options);
    ~RunningServer();
    RunningServer(const RunningServer &) = delete;
    RunningServer &operator=(const RunningServer &) = delete;

    int port() const { return port_; }
    httplib::Client client() const;              // 60 s read timeout
    server::Server &server() { return server_; } // for a Wyoming side on the same sessions

  private:
    Runtime runtime_;
    server::Server server_;
    int port_ = 0;
    std::thread thread_;
};

server::ServerOptions small_server(); // one thread, a fresh voice library folder

// The tiny model (ctest fixture tiny_model) on one thread, as the server tests serve it.
std::unique_ptr<PipelineModel> tiny_engine();

// Starts argv[0] (a path) with argv, no input, its stdout discarded and its stderr written to log_path;
// its pid, or -1 when it cannot be started.
pid_t spawn_logging_stderr(std::vector<std::string> argv, const std::string &log_path);

// Where a ServerProcess listens and keeps its files; the defaults suit one process per test.
struct ServerProcessSetup {
    std::string name = "server_process"; // its temp folders' tag: a different one for each process of a test
    int port = 0;                        // 0: any free one
    std::string voices_dir;              // "": a fresh folder of its own
};

// build/chatterbox-server -m <tiny model> --host 127.0.0.1 --port 0 -t 1 <args>, its stderr in a
// file; the constructor waits until it listens (ADD_FAILURE and port() -1 when it does not).
class ServerProcess {
  public:
    explicit ServerProcess(const std::vector<std::string> &args, const ServerProcessSetup &setup = {});
    ~ServerProcess(); // SIGKILL when still running
    ServerProcess(const ServerProcess &) = delete;
    ServerProcess &operator=(const ServerProcess &) = delete;

    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    httplib::Client client() const;
    void send_signal(int signal) const;
    // The exit code; nullopt when it still runs after `timeout` or ended by a signal.
    std::optional<int> wait_exit(std::chrono::seconds timeout);
    std::string log() const; // its stderr so far
    // The VmRSS and VmHWM lines of /proc/PID/status, e.g. "VmRSS: 680572 kB, VmHWM: 687524 kB".
    std::string memory() const;

  private:
    pid_t pid_ = -1;
    int port_ = -1;
    bool exited_ = false;
    std::string log_path_;
};

httplib::Client loopback_client(int port);

// A streamed request on its own thread that holds its session: it takes the first audio, then waits
// for hang_up() (or the destructor) and drops the connection.
class HeldStream {
  public:
    HeldStream(int port, nlohmann::json body); // sent with stream_format "audio"
    ~HeldStream();
    bool wait_first_audio(std::chrono::seconds timeout);
    void hang_up(); // and waits until the client is gone

  private:
    std::promise<void> first_audio_, hang_up_;
    std::future<void> first_audio_arrived_;
    std::thread thread_;
};

// A speech request of the built-in voice ("alloy") with a seed and a token budget.
nlohmann::json speech(const std::string &input, uint64_t seed, int max_new_tokens);
httplib::Result post(httplib::Client &client, const nlohmann::json &body, const httplib::Headers &headers = {});
// POSTs and hands the body to `receive` as it arrives (false from it drops the connection).
httplib::Result post_streaming(httplib::Client &client, const nlohmann::json &body,
                               std::function<bool(const char *, size_t)> receive);

std::vector<int16_t> pcm_samples(const std::string &bytes); // s16le
std::vector<int16_t> pcm_of(const std::vector<float> &wave);
std::string unbase64(const std::string &text);

// The events of an SSE body (each event's data: JSON), ADD_FAILURE for a malformed one.
std::vector<nlohmann::json> sse_events(const std::string &body);

// The value of one sample of a Prometheus exposition, `series` spelled as the exposition spells it
// (name{label="value",...} in the server's label order); nullopt when absent.
std::optional<double> metric_sample(const std::string &exposition, const std::string &series);
// `promtool check metrics` on the exposition: "" when it passes, else promtool's complaint;
// nullopt when promtool is not installed.
std::optional<std::string> promtool_check(const std::string &exposition);

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
    // the body) in the streaming windows, as the server answers it, whole or streamed.
    static std::vector<float> session_wave(const nlohmann::json &body);

    static inline std::unique_ptr<PipelineModel> engine_;
};

} // namespace chatterbox::test
