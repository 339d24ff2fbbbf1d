#pragma once
// The server's counters, gauges and histograms, served at GET /metrics in the Prometheus text
// exposition format (version 0.0.4):
//
//   chatterbox_http_requests_total{method,route,status}     counter    every answered HTTP request
//   chatterbox_http_request_duration_seconds{route}         histogram  request read to response written
//   chatterbox_syntheses_total{outcome}                     counter    completed, deadline, client_gone,
//                                                                      shutdown, failed
//   chatterbox_time_to_first_audio_seconds                  histogram  synthesis start to first audio
//   chatterbox_real_time_factor                             histogram  synthesis seconds / audio seconds
//   chatterbox_audio_seconds_total, chatterbox_speech_tokens_total      counters of completed syntheses
//   chatterbox_sessions, _sessions_busy, _queue_depth, _requests_in_flight, _draining     gauges
//   chatterbox_t3_batch_size, _batch_requests, _batch_waiting                             gauges
//   chatterbox_t3_batch_steps_total, _batch_request_steps_total    counters (their ratio: the mean occupancy)
//   chatterbox_flow_batch_size, ... _request_steps_total           the same of the flow's CFM batch
//   chatterbox_vocoder_batch_size, ... _request_steps_total        the same of the vocoder's batch (a step: one HiFT
//   run) chatterbox_t3_voice_prefix_hits_total, _misses_total           counters of the kept voice prefixes
//   chatterbox_wyoming_events_total{type}                   counter    Wyoming events received (wyoming_server.h)
//   chatterbox_wyoming_connections                          gauge      Wyoming connections open now
//
// Routes are labelled by their pattern (voice names folded into {name}); paths that are no route
// of the API share route="other", so a client cannot grow the label set without bound.

#include "core/batch_loop.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace chatterbox {
struct SynthesisResult;
}

namespace chatterbox::server {

// How a watched synthesis ended.
enum class SynthesisOutcome { completed, deadline, client_gone, shutdown, failed };
const char *outcome_name(SynthesisOutcome outcome);

// A cumulative histogram over fixed upper bounds (the +Inf bucket is implicit).
class Histogram {
  public:
    explicit Histogram(std::vector<double> upper_bounds);
    void observe(double value);
    // The _bucket, _sum and _count lines of `name`, with `labels` (`key="value"` pairs or "").
    void write(std::string &out, const std::string &name, const std::string &labels) const;

  private:
    std::vector<double> upper_bounds_;
    std::vector<uint64_t> counts_; // per bucket, not cumulative; the last is +Inf
    double sum_ = 0;
    uint64_t count_ = 0;
};

// A batch of one stage (t3/batch.h, s3gen/flow_batch.h, hift/vocoder_batch.h): its size (0: no batching),
// requests in it and waiting for room, and since start the steps and the requests those steps ran.
struct BatchGauges {
    int size = 0;
    BatchCounts counts;
};

struct ServerGauges {
    int sessions = 0, busy = 0, waiting = 0, in_flight = 0;
    bool draining = false;
    BatchGauges t3_batch, flow_batch, vocoder_batch;
    // The kept voice prefixes (t3/prefix_cache.h): requests that found theirs, and that computed it.
    uint64_t voice_prefix_hits = 0, voice_prefix_misses = 0;
};

// The Wyoming event types the server answers; any other type is counted as "other".
std::string wyoming_event_label(const std::string &type);

class Metrics {
  public:
    Metrics();

    void count_request(const std::string &method, const std::string &path, int status,
                       std::optional<std::chrono::steady_clock::duration> duration); // nullopt: unknown
    void count_synthesis(SynthesisOutcome outcome);
    std::map<SynthesisOutcome, uint64_t> syntheses() const; // the counts so far, by outcome
    // A completed synthesis: its time to first audio, real-time factor, audio and tokens.
    void observe_audio(const SynthesisResult &result);
    // --- Wyoming (wyoming_server.h)
    void count_wyoming_event(const std::string &type);
    void set_wyoming_connections(int open);
    // ---

    std::string exposition(const ServerGauges &gauges) const;

  private:
    mutable std::mutex mutex_;
    std::map<std::tuple<std::string, std::string, int>, uint64_t> requests_; // method, route, status
    std::map<std::string, Histogram> request_seconds_;                       // by route
    std::map<SynthesisOutcome, uint64_t> syntheses_;
    Histogram first_audio_seconds_, real_time_factor_;
    double audio_seconds_ = 0;
    uint64_t speech_tokens_ = 0;
    std::map<std::string, uint64_t> wyoming_events_; // by wyoming_event_label
    int wyoming_connections_ = 0;
};

// The route label of a request path (see above).
std::string route_label(const std::string &path);
// A label value with \, " and newline escaped as the exposition format asks.
std::string escape_label_value(const std::string &value);

constexpr const char *kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

} // namespace chatterbox::server
