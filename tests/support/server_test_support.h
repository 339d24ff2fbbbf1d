#pragma once
// Helpers for the chatterbox-server tests (with running_server.h: a server in-process): the real
// chatterbox-server executable as a child process, requests to /v1/audio/speech, and reading
// /metrics (samples, and a check by promtool, Prometheus's own parser).

#include "server/server.h"
#include "support/running_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace chatterbox::test {

// A test suite over the tiny model's engine (1 CPU thread), loaded once per suite.
class TinyEngineTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite();
    static void TearDownTestSuite() { engine_.reset(); }
    // Server options for tests: 1 thread per session, a fresh voice library (not the user's), the
    // rest as the server's defaults.
    static server::ServerOptions small_server();

    inline static std::unique_ptr<Engine> engine_;
};

// build/chatterbox-server -m <tiny model> --host 127.0.0.1 --port 0 -t 1 <args>, its stderr in a
// file; the constructor waits until it listens (ADD_FAILURE and port() -1 when it does not).
class ServerProcess {
  public:
    explicit ServerProcess(const std::vector<std::string> &args);
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

nlohmann::json speech(const std::string &input, uint64_t seed, int max_new_tokens);
httplib::Result post(httplib::Client &client, const nlohmann::json &body, const httplib::Headers &headers = {});
// POSTs and hands the body to `receive` as it arrives (false from it drops the connection).
httplib::Result post_streaming(httplib::Client &client, const nlohmann::json &body,
                               std::function<bool(const char *, size_t)> receive);

// The events of an SSE body (each event's data: JSON), ADD_FAILURE for a malformed one.
std::vector<nlohmann::json> sse_events(const std::string &body);

// The value of one sample of a Prometheus exposition, `series` spelled as the exposition spells it
// (name{label="value",...} in the server's label order); nullopt when absent.
std::optional<double> metric_sample(const std::string &exposition, const std::string &series);
// `promtool check metrics` on the exposition: "" when it passes, else promtool's complaint;
// nullopt when promtool is not installed.
std::optional<std::string> promtool_check(const std::string &exposition);

} // namespace chatterbox::test
