#pragma once
// The speech requests in flight, watched by one thread that cancels a synthesis when
//   - its deadline passes (ServerOptions::deadline_seconds; answered 504, or an SSE error event),
//   - its client has hung up (noticed within one poll, ~50 ms, plus one graph node), or
//   - the server's drain ran out of time (SIGTERM, --drain-seconds).
// Each request gets its own cancel flag (SynthesisOptions::cancel), so a cancel never reaches the
// next request of the same session.
//
// The client's connection: httplib's Request::is_connection_closed for an HTTP request (it peeks
// at the connection's socket), a poll of the socket for the peer's hang-up (POLLRDHUP) for a
// Wyoming connection. A client that half-closes its side (shutdown(SHUT_WR)) while still reading
// counts as gone: HTTP clients do not do that.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace httplib {
struct Request;
}

namespace chatterbox::server {

enum class StopReason { none, deadline, client_gone, shutdown };

class RequestWatch;

// One speech request under watch, from before it queues for a session to the end of its answer.
class WatchedRequest {
  public:
    ~WatchedRequest(); // leaves the watch
    WatchedRequest(const WatchedRequest &) = delete;
    WatchedRequest &operator=(const WatchedRequest &) = delete;

    const volatile int *cancel_flag() const { return &cancel_; }
    // Why the synthesis was cancelled; none while it was not.
    StopReason reason() const { return reason_.load(); }

  private:
    friend class RequestWatch;
    WatchedRequest(RequestWatch &watch, std::chrono::steady_clock::time_point deadline,
                   std::function<bool()> client_gone);
    void stop(StopReason reason); // the first reason wins

    RequestWatch &watch_;
    const std::chrono::steady_clock::time_point deadline_; // max(): none
    const std::function<bool()> client_gone_;              // whether the client has hung up
    volatile int cancel_ = 0;                              // written with __atomic_store_n
    std::atomic<StopReason> reason_{StopReason::none};
};

class RequestWatch {
  public:
    // deadline_seconds: 0 = none.
    explicit RequestWatch(double deadline_seconds);
    ~RequestWatch();
    RequestWatch(const RequestWatch &) = delete;
    RequestWatch &operator=(const RequestWatch &) = delete;

    // Watches a request from now on; nullptr while draining (the caller answers 503).
    std::unique_ptr<WatchedRequest> begin(const httplib::Request &http_request);
    // The same for a connection whose socket the caller holds (Wyoming).
    std::unique_ptr<WatchedRequest> begin(int socket);

    // From now on begin() refuses; requests already begun run on.
    void start_draining();
    bool draining() const { return draining_.load(); }
    int in_flight() const;
    // Waits until no request is in flight or `timeout` passed; true when idle.
    bool wait_idle(std::chrono::steady_clock::duration timeout) const;
    // Cancels every request in flight (StopReason::shutdown); returns how many.
    int cancel_all();

    double deadline_seconds() const { return deadline_seconds_; }

  private:
    friend class WatchedRequest;
    std::unique_ptr<WatchedRequest> begin(std::function<bool()> client_gone);
    void leave(WatchedRequest *request);
    void run();

    const double deadline_seconds_;
    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    std::vector<WatchedRequest *> active_;
    std::atomic<bool> draining_{false};
    bool stopping_ = false;
    std::thread thread_;
};

// Whether the peer of a connected socket has hung up (or the connection failed).
bool peer_hung_up(int socket);

} // namespace chatterbox::server
