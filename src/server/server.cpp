#include "server/server.h"

#include "core/error.h"
#include "server/api_error.h"
#include "server/speech_handler.h"
#include "server/voice_routes.h"
#include "server/watched_synthesis.h"
#include "server/web_page.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <thread>

namespace chatterbox::server {
namespace {

using nlohmann::json;

constexpr const char *kModelId = "chatterbox";

void send_json(httplib::Response &response, int status, const json &body) {
    response.status = status;
    response.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response &response, const ApiError &error) {
    response.status = error.status;
    response.set_content(error.json(), "application/json");
}

// The status httplib itself answered (no route, body too large, unreadable request), as an ApiError.
ApiError protocol_error(int status) {
    switch (status) {
    case 404:
        return ApiError(404, "no such route", "", "invalid_request_error", "not_found");
    case 413:
        return ApiError(413, "the request body is too large", "", "invalid_request_error", "body_too_large");
    case 400:
        return ApiError(400, "the HTTP request could not be read");
    default:
        return ApiError(status, concat("the request failed with HTTP status ", status));
    }
}

// When this worker thread's current request was routed; read by the logger, which httplib calls on
// the same thread once the response is written. {} : not routed (an unreadable request).
thread_local std::chrono::steady_clock::time_point t_request_started;

PipelineSessionOptions session_options(const Runtime &runtime, const ServerOptions &options) {
    PipelineSessionOptions session = runtime.session_options();
    session.threads = options.threads;
    return session;
}

} // namespace

bool constant_time_equal(const std::string &a, const std::string &b) {
    const size_t n = std::max(a.size(), b.size());
    size_t difference = a.size() ^ b.size();
    for (size_t i = 0; i < n; ++i) difference |= size_t((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
    return difference == 0;
}

Server::Server(Runtime &runtime, const ServerOptions &options)
    : runtime_(runtime), engine_(runtime.engine()), options_(options),
      pool_(runtime, options.sessions, options.queue, session_options(runtime, options)),
      voices_(options.voices_dir.empty() ? default_voices_dir() : options.voices_dir), watch_(options.deadline_seconds),
      http_(std::make_unique<httplib::Server>()) {
    if (options.deadline_seconds < 0)
        throw InvalidArgument(concat("deadline_seconds is ", options.deadline_seconds, ", expected 0 (none) or more"));
    // Every request holds a worker thread while it waits in the queue or runs: one per session and
    // queue place, and a few more so /health and refusals are answered while all of those are taken.
    const size_t workers = size_t(options.sessions + options.queue + 4);
    http_->new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
    // httplib has one body limit: the larger one; each route checks its own.
    http_->set_payload_max_length(std::max(options.max_body_bytes, options.max_upload_bytes));
    // httplib's default adds SO_REUSEPORT, with which a second server on the same port starts
    // without error and the kernel splits the clients between the two; SO_REUSEADDR alone still
    // allows a restart while old connections linger in TIME_WAIT.
    http_->set_socket_options([](socket_t sock) {
        const int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    add_routes();
}

Server::~Server() { stop(); }

void Server::add_routes() {
    http_->set_pre_routing_handler([this](const httplib::Request &request, httplib::Response &response) {
        // --- operations: request timing for /metrics, refusal while draining
        t_request_started = std::chrono::steady_clock::now();
        if (watch_.draining() && request.path.rfind("/v1/", 0) == 0) {
            response.set_header("Retry-After", std::to_string(options_.retry_after_seconds));
            send_error(response, draining_error());
            return httplib::Server::HandlerResponse::Handled;
        }
        // ---
        // httplib limits only bodies that state their Content-Length; a chunked one could fill memory.
        if (request.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos) {
            send_error(response, ApiError(411, "send the request body with a Content-Length, not chunked", "",
                                          "invalid_request_error", "length_required"));
            return httplib::Server::HandlerResponse::Handled;
        }
        if (options_.api_key.empty() || request.path.rfind("/v1/", 0) != 0)
            return httplib::Server::HandlerResponse::Unhandled;
        if (constant_time_equal(request.get_header_value("Authorization"), "Bearer " + options_.api_key))
            return httplib::Server::HandlerResponse::Unhandled;
        send_error(response, ApiError(401, "a valid API key is needed: Authorization: Bearer KEY", "",
                                      "invalid_request_error", "invalid_api_key"));
        return httplib::Server::HandlerResponse::Handled;
    });
    http_->set_exception_handler([](const httplib::Request &, httplib::Response &response, std::exception_ptr thrown) {
        try {
            std::rethrow_exception(thrown);
        } catch (const ApiError &e) {
            send_error(response, e);
        } catch (const InvalidArgument &e) {
            send_error(response, ApiError(400, e.what()));
        } catch (const std::exception &e) {
            send_error(response, ApiError(500, e.what(), "", "server_error"));
        }
    });
    http_->set_error_handler(
        httplib::Server::HandlerWithResponse([](const httplib::Request &, httplib::Response &response) {
            if (!response.body.empty() || response.content_provider_)
                return httplib::Server::HandlerResponse::Unhandled; // an answer of ours
            send_error(response, protocol_error(response.status));
            return httplib::Server::HandlerResponse::Handled;
        }));

    // --- operations
    http_->set_logger([this](const httplib::Request &request, const httplib::Response &response) {
        std::optional<std::chrono::steady_clock::duration> duration;
        if (t_request_started != std::chrono::steady_clock::time_point{})
            duration = std::chrono::steady_clock::now() - t_request_started;
        t_request_started = {};
        metrics_.count_request(request.method, request.path, response.status, duration);
    });
    http_->Get("/metrics", [this](const httplib::Request &, httplib::Response &response) {
        ServerGauges gauges{pool_.size(), pool_.busy(), pool_.waiting(), watch_.in_flight(), watch_.draining()};
        if (const t3::T3Batch *batch = runtime_.t3_batch())
            gauges.t3_batch = {batch->options().max_sequences, batch->counts()};
        if (const s3gen::FlowBatch *batch = runtime_.flow_batch())
            gauges.flow_batch = {batch->options().max_requests, batch->counts()};
        if (const hift::VocoderBatch *batch = runtime_.vocoder_batch())
            gauges.vocoder_batch = {batch->options().max_requests, batch->counts()};
        if (const t3::PrefixCache *prefixes = runtime_.t3_prefixes()) {
            gauges.voice_prefix_hits = prefixes->hits();
            gauges.voice_prefix_misses = prefixes->misses();
        }
        response.set_content(metrics_.exposition(gauges), kMetricsContentType);
    });
    // ---
    http_->Get("/health", [this](const httplib::Request &, httplib::Response &response) {
        send_json(response, 200,
                  {{"status", "ok"}, {"sessions", pool_.size()}, {"busy", pool_.busy()}, {"waiting", pool_.waiting()}});
    });
    // The engine is loaded before the server is built, so a server that answers is ready, unless it
    // is draining.
    http_->Get("/ready", [this](const httplib::Request &, httplib::Response &response) {
        if (watch_.draining())
            send_json(response, 503, {{"status", "draining"}});
        else
            send_json(response, 200, {{"status", "ready"}});
    });
    http_->Get("/v1/models", [](const httplib::Request &, httplib::Response &response) {
        send_json(
            response, 200,
            {{"object", "list"},
             {"data",
              json::array({{{"id", kModelId}, {"object", "model"}, {"created", 0}, {"owned_by", "resemble-ai"}}})}});
    });
    http_->Post("/v1/audio/speech", [this](const httplib::Request &request, httplib::Response &response) {
        check_body_size(request.body.size(), options_.max_body_bytes);
        answer_speech(engine_, pool_, voices_, options_, {watch_, metrics_}, request, response);
    });
    add_voice_routes(*http_, engine_, pool_, voices_, options_);
    add_web_page_routes(*http_, options_.limits); // GET /, /web/*: open without the API key
}

int Server::bind() {
    const int port = options_.port == 0 ? http_->bind_to_any_port(options_.host)
                                        : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port < 0) fail("cannot listen on ", options_.host, ":", options_.port, " (in use, or not an address here?)");
    return port;
}

void Server::run() {
    // A client that hangs up makes the next write raise SIGPIPE, which would end the process; the
    // failed write is handled as a disconnect instead.
    std::signal(SIGPIPE, SIG_IGN);
    entered_run_ = true;
    if (!stopping_) http_->listen_after_bind();
    left_run_ = true;
}

// httplib's stop() does nothing before its loop has started, and the loop would then run forever:
// a stop() that finds run() entered waits until httplib is running (or run() has given up).
// stopping_ is set before entered_run_ is read, and entered_run_ before stopping_, so one of the
// two always sees the other.
void Server::stop() {
    stopping_ = true;
    if (!entered_run_) return;
    while (!http_->is_running() && !left_run_) std::this_thread::yield();
    http_->stop();
}

int Server::drain(double seconds, const std::function<bool()> &hurry) {
    watch_.start_draining();
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(std::max(seconds, 0.0)));
    while (!watch_.wait_idle(std::chrono::milliseconds(100)))
        if (std::chrono::steady_clock::now() >= until || (hurry && hurry())) break;
    const int cancelled = watch_.cancel_all();
    // A cancelled synthesis ends within one graph node; the wait only bounds a stuck client write.
    if (cancelled > 0) watch_.wait_idle(std::chrono::seconds(10));
    stop();
    return cancelled;
}

} // namespace chatterbox::server
