#include "server/watched_synthesis.h"

#include "core/error.h"
#include "server/api_error.h"

#include <httplib.h>

namespace chatterbox::server {
namespace {

ApiError stopped_error(StopReason reason, double deadline_seconds) {
    switch (reason) {
    case StopReason::deadline:
        return ApiError(504, concat("the synthesis ran past the server's deadline of ", deadline_seconds, " s"), "",
                        "server_error", "deadline_exceeded");
    case StopReason::shutdown:
        return ApiError(503, "the server shut down before the synthesis finished; retry", "", "server_error",
                        "server_draining");
    case StopReason::client_gone:
    case StopReason::none:
        break;
    }
    return ApiError(499, "the client closed the connection", "", "invalid_request_error", "client_closed_request");
}

SynthesisOutcome outcome_of(StopReason reason) {
    switch (reason) {
    case StopReason::deadline:
        return SynthesisOutcome::deadline;
    case StopReason::shutdown:
        return SynthesisOutcome::shutdown;
    case StopReason::client_gone:
    case StopReason::none: // cancelled by a failed write: the client is gone
        break;
    }
    return SynthesisOutcome::client_gone;
}

} // namespace

ApiError draining_error() {
    return ApiError(503, "the server is shutting down; retry on another instance or later", "", "server_error",
                    "server_draining");
}

std::unique_ptr<WatchedRequest> watch_request(const SpeechOperations &operations, const httplib::Request &http_request,
                                              int retry_after_seconds, httplib::Response &response) {
    std::unique_ptr<WatchedRequest> watched = operations.watch.begin(http_request);
    if (watched) return watched;
    response.set_header("Retry-After", std::to_string(retry_after_seconds));
    throw draining_error();
}

SynthesisResult run_watched(const SpeechOperations &operations, const WatchedRequest &watched,
                            const std::function<SynthesisResult()> &synthesize) {
    try {
        SynthesisResult result = synthesize();
        operations.metrics.count_synthesis(SynthesisOutcome::completed);
        operations.metrics.observe_audio(result);
        return result;
    } catch (const Cancelled &) {
        operations.metrics.count_synthesis(outcome_of(watched.reason()));
        throw stopped_error(watched.reason(), operations.watch.deadline_seconds());
    } catch (...) {
        operations.metrics.count_synthesis(SynthesisOutcome::failed);
        throw;
    }
}

} // namespace chatterbox::server
