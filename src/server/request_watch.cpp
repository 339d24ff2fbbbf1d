#include "server/request_watch.h"

#include <httplib.h>

#include <poll.h>

#include <algorithm>

namespace chatterbox::server {
namespace {

// How often the watch looks at deadlines and connections.
constexpr auto kPollInterval = std::chrono::milliseconds(50);

} // namespace

bool peer_hung_up(int socket) {
    pollfd probe{socket, POLLRDHUP, 0};
    return poll(&probe, 1, 0) > 0 && (probe.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

WatchedRequest::WatchedRequest(RequestWatch &watch, std::chrono::steady_clock::time_point deadline,
                               std::function<bool()> client_gone)
    : watch_(watch), deadline_(deadline), client_gone_(std::move(client_gone)) {}

WatchedRequest::~WatchedRequest() { watch_.leave(this); }

void WatchedRequest::stop(StopReason reason) {
    StopReason none = StopReason::none;
    if (reason_.compare_exchange_strong(none, reason)) __atomic_store_n(&cancel_, 1, __ATOMIC_RELAXED);
}

RequestWatch::RequestWatch(double deadline_seconds) : deadline_seconds_(deadline_seconds) {
    thread_ = std::thread([this] { run(); });
}

RequestWatch::~RequestWatch() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

// httplib's check takes the socket by value and peeks at it without reading: safe from this thread
// while the request's own thread reads and writes, for as long as the request lasts.
std::unique_ptr<WatchedRequest> RequestWatch::begin(const httplib::Request &http_request) {
    return begin(http_request.is_connection_closed);
}

std::unique_ptr<WatchedRequest> RequestWatch::begin(int socket) {
    return begin([socket] { return peer_hung_up(socket); });
}

std::unique_ptr<WatchedRequest> RequestWatch::begin(std::function<bool()> client_gone) {
    const auto now = std::chrono::steady_clock::now();
    const auto deadline = deadline_seconds_ > 0 ? now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(deadline_seconds_))
                                                : std::chrono::steady_clock::time_point::max();
    std::lock_guard<std::mutex> lock(mutex_);
    // Checked under the lock that start_draining() takes: a request either is refused or is in
    // flight when the drain begins, and so is waited for.
    if (draining_) return nullptr;
    std::unique_ptr<WatchedRequest> request(new WatchedRequest(*this, deadline, std::move(client_gone)));
    active_.push_back(request.get());
    changed_.notify_all();
    return request;
}

void RequestWatch::leave(WatchedRequest *request) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        active_.erase(std::remove(active_.begin(), active_.end(), request), active_.end());
    }
    changed_.notify_all();
}

void RequestWatch::start_draining() {
    std::lock_guard<std::mutex> lock(mutex_);
    draining_ = true;
}

int RequestWatch::in_flight() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return int(active_.size());
}

bool RequestWatch::wait_idle(std::chrono::steady_clock::duration timeout) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return active_.empty(); });
}

int RequestWatch::cancel_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (WatchedRequest *request : active_) request->stop(StopReason::shutdown);
    return int(active_.size());
}

void RequestWatch::run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
        // Sleeps while nothing is in flight; polls every kPollInterval while something is.
        if (active_.empty())
            changed_.wait(lock, [&] { return stopping_ || !active_.empty(); });
        else
            changed_.wait_for(lock, kPollInterval, [&] { return stopping_; });
        const auto now = std::chrono::steady_clock::now();
        for (WatchedRequest *request : active_) {
            if (now >= request->deadline_)
                request->stop(StopReason::deadline);
            else if (request->client_gone_())
                request->stop(StopReason::client_gone);
        }
    }
}

} // namespace chatterbox::server
