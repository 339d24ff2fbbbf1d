#include "server/metrics.h"

#include "core/error.h"
#include "models/chatterbox/pipeline_session.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace chatterbox::server {
namespace {

// Shortest text that reads back as the same double; Prometheus spells infinity +Inf.
std::string number(double value) {
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    if (std::isnan(value)) return "NaN";
    char buffer[64];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return error == std::errc() ? std::string(buffer, end) : "NaN";
}

void write_header(std::string &out, const char *name, const char *type, const char *help) {
    out += concat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

std::string label(const char *key, const std::string &value) {
    return concat(key, "=\"", escape_label_value(value), "\"");
}

std::string with_braces(const std::string &labels) { return labels.empty() ? "" : "{" + labels + "}"; }

void write_sample(std::string &out, const std::string &name, const std::string &labels, double value) {
    out += concat(name, with_braces(labels), " ", number(value), "\n");
}

// A metric of one unlabelled sample: its header and the sample.
void write_single(std::string &out, const char *name, const char *type, const char *help, double value) {
    write_header(out, name, type, help);
    write_sample(out, name, "", value);
}

// The five metrics of one stage's batch, named prefix_size, _requests, _waiting, _steps_total and
// _request_steps_total; stage and step name it in the help texts ("T3", "decode").
void write_batch(std::string &out, const std::string &prefix, const std::string &stage, const std::string &step,
                 const BatchGauges &batch) {
    const auto write = [&](const char *suffix, const char *type, const std::string &help, double value) {
        write_single(out, (prefix + suffix).c_str(), type, help.c_str(), value);
    };
    write("_size", "gauge", "Requests the " + stage + " batch runs together at most (0: no batching).", batch.size);
    write("_requests", "gauge", "Requests in the " + stage + " batch now.", batch.counts.active);
    write("_waiting", "gauge", "Requests waiting for room in the " + stage + " batch.", batch.counts.waiting);
    write("_steps_total", "counter", stage + " batch " + step + " steps run.", double(batch.counts.steps));
    write("_request_steps_total", "counter",
          "Requests run by the " + stage + " batch " + step +
              " steps, summed over the steps (divided by the steps: the mean occupancy).",
          double(batch.counts.request_steps));
}

// Request durations: from the quick probes (/health) to long syntheses.
std::vector<double> request_buckets() { return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}; }

constexpr SynthesisOutcome kOutcomes[] = {SynthesisOutcome::completed, SynthesisOutcome::deadline,
                                          SynthesisOutcome::client_gone, SynthesisOutcome::shutdown,
                                          SynthesisOutcome::failed};

} // namespace

const char *outcome_name(SynthesisOutcome outcome) {
    switch (outcome) {
    case SynthesisOutcome::completed:
        return "completed";
    case SynthesisOutcome::deadline:
        return "deadline";
    case SynthesisOutcome::client_gone:
        return "client_gone";
    case SynthesisOutcome::shutdown:
        return "shutdown";
    case SynthesisOutcome::failed:
        return "failed";
    }
    return "unknown";
}

std::string escape_label_value(const std::string &value) {
    std::string out;
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string route_label(const std::string &path) {
    static const char *const kRoutes[] = {
        "/",          "/health",          "/ready",           "/metrics",
        "/v1/models", "/v1/audio/speech", "/v1/audio/voices", "/v1/audio/voice-conversion"};
    for (const char *route : kRoutes)
        if (path == route) return path;
    const std::string voices = "/v1/audio/voices/";
    if (path.size() > voices.size() && path.compare(0, voices.size(), voices) == 0) return voices + "{name}";
    return "other";
}

std::string wyoming_event_label(const std::string &type) {
    static const char *const kTypes[] = {"describe",         "synthesize",      "synthesize-start",
                                         "synthesize-chunk", "synthesize-stop", "ping"};
    for (const char *known : kTypes)
        if (type == known) return type;
    return "other";
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
    const size_t bucket = size_t(std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
                                 upper_bounds_.begin()); // the first bound >= value: le is inclusive
    ++counts_[bucket];
    sum_ += value;
    ++count_;
}

void Histogram::write(std::string &out, const std::string &name, const std::string &labels) const {
    const std::string prefix = labels.empty() ? "" : labels + ",";
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
        cumulative += counts_[i];
        const double bound = i < upper_bounds_.size() ? upper_bounds_[i] : INFINITY;
        write_sample(out, name + "_bucket", prefix + label("le", number(bound)), double(cumulative));
    }
    write_sample(out, name + "_sum", labels, sum_);
    write_sample(out, name + "_count", labels, double(count_));
}

Metrics::Metrics()
    // Time to first audio: streamed answers start in tenths of a second, whole ones take seconds.
    : first_audio_seconds_({0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60}),
      // Real-time factor: below 1 is faster than real time.
      real_time_factor_({0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 4, 8}) {}

void Metrics::count_request(const std::string &method, const std::string &path, int status,
                            std::optional<std::chrono::steady_clock::duration> duration) {
    const std::string route = route_label(path);
    std::lock_guard<std::mutex> lock(mutex_);
    ++requests_[{method, route, status}];
    if (duration)
        request_seconds_.try_emplace(route, request_buckets())
            .first->second.observe(std::chrono::duration<double>(*duration).count());
}

void Metrics::count_synthesis(SynthesisOutcome outcome) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++syntheses_[outcome];
}

std::map<SynthesisOutcome, uint64_t> Metrics::syntheses() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return syntheses_;
}

void Metrics::observe_audio(const SynthesisResult &result) {
    const double audio_seconds = double(result.wave.size()) / result.sample_rate;
    std::lock_guard<std::mutex> lock(mutex_);
    first_audio_seconds_.observe(result.seconds_to_first_audio);
    if (audio_seconds > 0) real_time_factor_.observe(result.seconds_total / audio_seconds);
    audio_seconds_ += audio_seconds;
    speech_tokens_ += uint64_t(std::max(result.speech_tokens, 0));
}

void Metrics::count_wyoming_event(const std::string &type) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++wyoming_events_[wyoming_event_label(type)];
}

void Metrics::set_wyoming_connections(int open) {
    std::lock_guard<std::mutex> lock(mutex_);
    wyoming_connections_ = open;
}

std::string Metrics::exposition(const ServerGauges &gauges) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    write_header(out, "chatterbox_http_requests_total", "counter",
                 "HTTP requests answered, by method, route and status.");
    for (const auto &[key, count] : requests_) {
        const auto &[method, route, status] = key;
        write_sample(
            out, "chatterbox_http_requests_total",
            concat(label("method", method), ",", label("route", route), ",", label("status", std::to_string(status))),
            double(count));
    }
    write_header(out, "chatterbox_http_request_duration_seconds", "histogram",
                 "Time from reading a request to the end of its response, by route.");
    for (const auto &[route, histogram] : request_seconds_)
        histogram.write(out, "chatterbox_http_request_duration_seconds", label("route", route));

    write_header(out, "chatterbox_syntheses_total", "counter",
                 "Syntheses that ended, by outcome (completed, deadline, client_gone, shutdown, failed).");
    for (SynthesisOutcome outcome : kOutcomes) {
        const auto found = syntheses_.find(outcome);
        write_sample(out, "chatterbox_syntheses_total", label("outcome", outcome_name(outcome)),
                     double(found == syntheses_.end() ? 0 : found->second));
    }
    write_header(out, "chatterbox_time_to_first_audio_seconds", "histogram",
                 "Time from the start of a completed synthesis to its first audio (its end, when not streamed).");
    first_audio_seconds_.write(out, "chatterbox_time_to_first_audio_seconds", "");
    write_header(out, "chatterbox_real_time_factor", "histogram",
                 "Synthesis time divided by the duration of the audio made, per completed synthesis.");
    real_time_factor_.write(out, "chatterbox_real_time_factor", "");
    write_single(out, "chatterbox_audio_seconds_total", "counter", "Seconds of audio made by completed syntheses.",
                 audio_seconds_);
    write_single(out, "chatterbox_speech_tokens_total", "counter", "Speech tokens made by completed syntheses.",
                 double(speech_tokens_));

    write_single(out, "chatterbox_sessions", "gauge", "Synthesis sessions of the pool.", gauges.sessions);
    write_single(out, "chatterbox_sessions_busy", "gauge", "Sessions running a synthesis now.", gauges.busy);
    write_single(out, "chatterbox_queue_depth", "gauge", "Requests waiting for a session now.", gauges.waiting);
    write_single(out, "chatterbox_requests_in_flight", "gauge", "Speech requests waiting or running now.",
                 gauges.in_flight);
    write_single(out, "chatterbox_draining", "gauge", "1 while the server drains before it stops (SIGTERM).",
                 gauges.draining ? 1 : 0);

    write_batch(out, "chatterbox_t3_batch", "T3", "decode", gauges.t3_batch);
    write_batch(out, "chatterbox_flow_batch", "flow CFM", "estimator", gauges.flow_batch);
    write_batch(out, "chatterbox_vocoder_batch", "HiFT", "vocoder", gauges.vocoder_batch);

    write_single(out, "chatterbox_t3_voice_prefix_hits_total", "counter",
                 "Requests whose voice's T3 conditioning prefix was kept (no conditioning prefill).",
                 double(gauges.voice_prefix_hits));
    write_single(out, "chatterbox_t3_voice_prefix_misses_total", "counter",
                 "Requests that computed their voice's T3 conditioning prefix.", double(gauges.voice_prefix_misses));

    // --- Wyoming
    write_header(out, "chatterbox_wyoming_events_total", "counter",
                 "Wyoming events received, by type (unknown types as other).");
    for (const auto &[type, count] : wyoming_events_)
        write_sample(out, "chatterbox_wyoming_events_total", label("type", type), double(count));
    write_single(out, "chatterbox_wyoming_connections", "gauge", "Wyoming connections open now.", wyoming_connections_);
    // ---
    return out;
}

} // namespace chatterbox::server
