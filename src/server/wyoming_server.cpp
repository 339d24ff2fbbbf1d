#include "server/wyoming_server.h"

#include "core/error.h"
#include "server/wyoming_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace chatterbox::server {
namespace {

timeval as_timeval(double seconds) {
    const auto micros = std::llround(seconds * 1e6);
    return timeval{time_t(micros / 1000000), suseconds_t(micros % 1000000)};
}

void set_timeout(int socket, int option, double seconds) {
    const timeval timeout = as_timeval(seconds);
    setsockopt(socket, SOL_SOCKET, option, &timeout, sizeof timeout);
}

// After our last event: our side is shut, and what the peer still sends is read and dropped (for
// at most a second and a megabyte) until it closes too. Closing with unread bytes would reset the
// connection, and the peer could lose the error event sent last.
void linger(int socket) {
    shutdown(socket, SHUT_WR);
    set_timeout(socket, SO_RCVTIMEO, 0.2);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    char sink[16 << 10];
    for (size_t dropped = 0; dropped < (1u << 20) && std::chrono::steady_clock::now() < give_up;) {
        const ssize_t n = recv(socket, sink, sizeof sink, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        dropped += size_t(n);
    }
}

// Connections turned away while this many are already being turned away are closed at once.
constexpr int kMaxRefusing = 16;

} // namespace

void parse_wyoming_address(const std::string &address, WyomingOptions &options) {
    std::string rest = address;
    if (rest.rfind("tcp://", 0) == 0) rest = rest.substr(6); // Wyoming's own URI form
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
        throw InvalidArgument(concat("Wyoming address '", address, "' is not HOST:PORT (e.g. 0.0.0.0:10200)"));
    std::string host = rest.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    const std::string port = rest.substr(colon + 1);
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(port) > 65535)
        throw InvalidArgument(concat("Wyoming address '", address, "': the port must be 0 to 65535"));
    options.host = host;
    options.port = std::stoi(port);
}

wyoming::EventLimits wyoming_event_limits(const RequestLimits &limits) {
    wyoming::EventLimits event_limits;
    event_limits.max_data_bytes = 12 * limits.max_input_chars + (16 << 10);
    event_limits.max_header_bytes = event_limits.max_data_bytes + 1024; // the data may come inline
    event_limits.max_payload_bytes = 64 << 10;                          // read and dropped: audio of a client
    return event_limits;
}

WyomingServer::WyomingServer(Server &server, const WyomingOptions &options)
    : server_(server), options_(options), limits_(wyoming_event_limits(server.options().limits)) {
    if (options.max_connections < 1)
        throw InvalidArgument(concat("Wyoming max_connections is ", options.max_connections, ", expected 1 or more"));
    if (!(options.idle_seconds > 0) || !(options.write_timeout_seconds > 0))
        throw InvalidArgument("the Wyoming idle and write timeouts must be positive");
    if (pipe2(wake_, O_CLOEXEC) != 0) fail("cannot create a pipe: ", std::strerror(errno));
}

WyomingServer::~WyomingServer() {
    stop();
    if (listener_ >= 0) close(listener_);
    close(wake_[0]);
    close(wake_[1]);
}

int WyomingServer::bind() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo *found = nullptr;
    const std::string port = std::to_string(options_.port);
    if (const int error = getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found); error != 0)
        fail("Wyoming: cannot resolve ", options_.host, ": ", gai_strerror(error));
    for (const addrinfo *candidate = found; candidate && listener_ < 0; candidate = candidate->ai_next) {
        const int socket =
            ::socket(candidate->ai_family, candidate->ai_socktype | SOCK_CLOEXEC, candidate->ai_protocol);
        if (socket < 0) continue;
        const int yes = 1;
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes); // not SO_REUSEPORT (server.cpp says why)
        if (::bind(socket, candidate->ai_addr, candidate->ai_addrlen) == 0 && listen(socket, 64) == 0)
            listener_ = socket;
        else
            close(socket);
    }
    freeaddrinfo(found);
    if (listener_ < 0)
        fail("Wyoming: cannot listen on ", options_.host, ":", options_.port, " (in use, or not an address here?)");
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    getsockname(listener_, reinterpret_cast<sockaddr *>(&bound), &length);
    return bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6 &>(bound).sin6_port)
                                       : ntohs(reinterpret_cast<const sockaddr_in &>(bound).sin_port);
}

void WyomingServer::run() {
    if (listener_ < 0) fail("Wyoming: run() before bind()");
    while (!stopping_) {
        pollfd waits[2] = {{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
        if (poll(waits, 2, -1) < 0) {
            if (errno == EINTR) continue;
            fail("Wyoming: poll failed: ", std::strerror(errno));
        }
        if (stopping_ || (waits[1].revents & POLLIN)) break;
        if (!(waits[0].revents & POLLIN)) continue;
        const int socket = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (socket < 0) {
            // Out of descriptors or memory: the listener stays readable, so wait instead of spinning.
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue; // or the peer gave up already
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) {
            close(socket);
            break;
        }
        const bool serve = serving_ < options_.max_connections;
        if (!serve && refusing_ >= kMaxRefusing) {
            close(socket);
            continue;
        }
        open_.push_back(socket);
        ++(serve ? serving_ : refusing_);
        server_.metrics().set_wyoming_connections(serving_);
        std::thread([this, socket, serve] {
            if (serve)
                serve_connection(socket);
            else
                refuse_connection(socket);
            closed(socket, serve);
        }).detach();
    }
}

void WyomingServer::serve_connection(int socket) {
    set_timeout(socket, SO_RCVTIMEO, options_.idle_seconds);
    set_timeout(socket, SO_SNDTIMEO, options_.write_timeout_seconds);
    const int yes = 1;
    setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes); // small events go out at once
    const WyomingContext context{server_.engine(), server_.pool(),    server_.voices(), server_.options(),
                                 server_.watch(),  server_.metrics(), limits_};
    serve_wyoming_connection(context, socket);
}

void WyomingServer::refuse_connection(int socket) {
    set_timeout(socket, SO_SNDTIMEO, 1.0);
    send_all(socket, wyoming::encode_event("error", {{"text", concat("all ", options_.max_connections,
                                                                     " Wyoming connections are taken; retry later")},
                                                     {"code", "too_many_connections"}}));
}

// The socket is closed under the lock, so stop() never shuts down a descriptor number that a
// new connection has reused.
void WyomingServer::closed(int socket, bool served) {
    linger(socket);
    std::lock_guard<std::mutex> lock(mutex_);
    close(socket);
    open_.erase(std::remove(open_.begin(), open_.end(), socket), open_.end());
    --(served ? serving_ : refusing_);
    server_.metrics().set_wyoming_connections(serving_);
    all_closed_.notify_all();
}

void WyomingServer::stop() {
    stopping_ = true;
    const char wake = 1;
    if (write(wake_[1], &wake, 1) < 0) {
        // The pipe is full: run() has been woken already.
    }
    std::unique_lock<std::mutex> lock(mutex_);
    for (int socket : open_) shutdown(socket, SHUT_RDWR);
    all_closed_.wait(lock, [&] { return open_.empty(); });
}

int WyomingServer::connections() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return serving_;
}

} // namespace chatterbox::server
