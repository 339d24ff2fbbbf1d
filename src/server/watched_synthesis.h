#pragma once
// The speech handler's side of the server's operations: a synthesis run under the RequestWatch
// (deadline, client hang-up, drain) and counted in the Metrics.

#include "server/api_error.h"
#include "server/metrics.h"
#include "server/request_watch.h"

#include "models/chatterbox/pipeline_session.h"

#include <functional>
#include <memory>

namespace httplib {
struct Request;
struct Response;
} // namespace httplib

namespace chatterbox::server {

struct SpeechOperations {
    RequestWatch &watch;
    Metrics &metrics;
};

// 503 for API requests that arrive while the server drains.
ApiError draining_error();

// Watches the request from now on; throws ApiError 503 (Retry-After on `response`) while draining.
std::unique_ptr<WatchedRequest> watch_request(const SpeechOperations &operations, const httplib::Request &http_request,
                                              int retry_after_seconds, httplib::Response &response);

// Runs `synthesize` (which passes watched.cancel_flag() to the session) and counts its outcome. A
// cancelled synthesis becomes ApiError: 504 past the deadline, 503 when the drain ran out, 499 when
// the client hung up (nobody reads that answer; the status is for the metrics and the log).
SynthesisResult run_watched(const SpeechOperations &operations, const WatchedRequest &watched,
                            const std::function<SynthesisResult()> &synthesize);

} // namespace chatterbox::server
