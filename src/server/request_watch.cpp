#include "server/request_watch.h"

#include <httplib.h>

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace chatterbox::server {
namespace {

// How often the watch looks at deadlines and connections.
constexpr auto kPollInterval = std::chrono::milliseconds(50);

// host and port of a socket address, as httplib spells them (numeric, getnameinfo).
bool numeric_address(const sockaddr_storage &address, socklen_t length, std::string &host, int &port) {
    char name[NI_MAXHOST];
    if (getnameinfo(reinterpret_cast<const sockaddr *>(&address), length, name, sizeof name, nullptr, 0,
                    NI_NUMERICHOST) != 0)
        return false;
    host = name;
    if (address.ss_family == AF_INET)
        port = ntohs(reinterpret_cast<const sockaddr_in &>(address).sin_port);
    else if (address.ss_family == AF_INET6)
        port = ntohs(reinterpret_cast<const sockaddr_in6 &>(address).sin6_port);
    else
        return false;
    return true;
}

bool socket_is(int fd, int (*query)(int, sockaddr *, socklen_t *), const std::string &host, int port) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (query(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0) return false;
    std::string found_host;
    int found_port = -1;
    return numeric_address(address, length, found_host, found_port) && found_port == port && found_host == host;
}

} // namespace

int find_connection_socket(const std::string &local_host, int local_port, const std::string &remote_host,
                           int remote_port) {
    if (local_port < 0 || remote_port < 0) return -1;
    DIR *fds = opendir("/proc/self/fd");
    if (!fds) return -1;
    int found = -1;
    while (const dirent *entry = readdir(fds)) {
        char *end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == dirfd(fds)) continue;
        // getpeername first: it fails at once on files, pipes and the listening socket.
        if (socket_is(int(fd), getpeername, remote_host, remote_port) &&
            socket_is(int(fd), getsockname, local_host, local_port)) {
            found = int(fd);
            break;
        }
    }
    closedir(fds);
    return found;
}

bool peer_hung_up(int socket) {
    pollfd probe{socket, POLLRDHUP, 0};
    return poll(&probe, 1, 0) > 0 && (probe.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

WatchedRequest::WatchedRequest(RequestWatch &watch, std::chrono::steady_clock::time_point deadline, int socket)
    : watch_(watch), deadline_(deadline), socket_(socket) {}

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

std::unique_ptr<WatchedRequest> RequestWatch::begin(const httplib::Request &http_request) {
    return begin(find_connection_socket(http_request.local_addr, http_request.local_port, http_request.remote_addr,
                                        http_request.remote_port));
}

std::unique_ptr<WatchedRequest> RequestWatch::begin(int socket) {
    const auto now = std::chrono::steady_clock::now();
    const auto deadline = deadline_seconds_ > 0 ? now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(deadline_seconds_))
                                                : std::chrono::steady_clock::time_point::max();
    std::lock_guard<std::mutex> lock(mutex_);
    // Checked under the lock that start_draining() takes: a request either is refused or is in
    // flight when the drain begins, and so is waited for.
    if (draining_) return nullptr;
    std::unique_ptr<WatchedRequest> request(new WatchedRequest(*this, deadline, socket));
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
            else if (request->socket_ >= 0 && peer_hung_up(request->socket_))
                request->stop(StopReason::client_gone);
        }
    }
}

} // namespace chatterbox::server
