#pragma once
// Helpers for the chatterbox-server tests: a server in-process on a free loopback port, the real
// chatterbox-server executable as a child process, requests to /v1/audio/speech, and reading
// /metrics (samples, and a check by promtool, Prometheus's own parser).

#include "server/server.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace chatterbox::test {

// A server on a free loopback port, serving on its own thread until destroyed.
class RunningServer {
  public:
    RunningServer(const Engine &engine, server::ServerOptions options);
    ~RunningServer();

    int port() const { return port_; }
    server::Server &server() { return server_; }
    httplib::Client client() const;

  private:
    server::Server server_;
    int port_ = 0;
    std::thread thread_;
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
