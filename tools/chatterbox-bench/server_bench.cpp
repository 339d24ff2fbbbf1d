#include "server_bench.h"

#include "core/error.h"
#include "server/server.h"
#include "timing.h"

#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>

namespace chatterbox::bench {
namespace {

struct ClientTally {
    std::vector<double> ttfb_ms;
    size_t audio_bytes = 0;
    int failed = 0;
};

// One streamed pcm request; the time to its first audio byte goes to the tally.
void send_request(httplib::Client &client, const std::string &body, ClientTally &tally) {
    httplib::Request request;
    request.method = "POST";
    request.path = "/v1/audio/speech";
    request.body = body;
    request.set_header("Content-Type", "application/json");
    const Clock::time_point sent = Clock::now();
    bool first = true;
    size_t bytes = 0;
    request.content_receiver = [&](const char *, size_t n, uint64_t, uint64_t) {
        if (first) tally.ttfb_ms.push_back(ms_since(sent));
        first = false;
        bytes += n;
        return true;
    };
    const httplib::Result result = client.send(request);
    if (!result || result->status != 200 || first) {
        // Say why once per client: a failed request is counted, not timed, and all failing means a setup problem.
        if (tally.failed++ == 0)
            std::fprintf(stderr, "chatterbox-bench server: a request failed after %.0f ms: %s\n", ms_since(sent),
                         !result ? httplib::to_string(result.error()).c_str()
                                 : concat("HTTP ", result->status, " ", result->body.substr(0, 300)).c_str());
    } else {
        tally.audio_bytes += bytes;
    }
}

nlohmann::json run_level(Runtime &runtime, const ServerBenchArguments &options, int clients) {
    server::ServerOptions server_options;
    server_options.port = 0;
    server_options.sessions = options.sessions > 0 ? options.sessions : clients;
    server_options.queue = clients; // every client waits rather than being turned away
    server_options.threads = options.session_threads;
    server::Server server(runtime, server_options);
    const int port = server.bind();
    std::thread serving([&] { server.run(); });

    const std::string body =
        nlohmann::json{
            {"model", "chatterbox"},           {"input", options.text},    {"voice", "default"},
            {"response_format", "pcm"},        {"stream_format", "audio"}, {"max_new_tokens", options.max_new_tokens},
            {"ignore_eos", options.ignore_eos}}
            .dump();
    std::vector<ClientTally> tallies(static_cast<size_t>(clients));
    reset_peak_rss();
    const double cpu_start = process_cpu_ms();
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c)
        threads.emplace_back([&, c] {
            httplib::Client client("127.0.0.1", port);
            client.set_read_timeout(3600, 0);
            for (int r = 0; r < options.requests_per_client; ++r) send_request(client, body, tallies[size_t(c)]);
        });
    for (std::thread &t : threads) t.join();
    const double wall_s = ms_since(start) / 1e3;
    const double cpu_s = (process_cpu_ms() - cpu_start) / 1e3;
    // The server's side of every request: completed, or why not (client_gone, failed, ...).
    nlohmann::json syntheses = nlohmann::json::object();
    for (const auto &[outcome, count] : server.metrics().syntheses()) syntheses[server::outcome_name(outcome)] = count;
    server.stop();
    serving.join();

    ClientTally all;
    for (const ClientTally &t : tallies) {
        all.ttfb_ms.insert(all.ttfb_ms.end(), t.ttfb_ms.begin(), t.ttfb_ms.end());
        all.audio_bytes += t.audio_bytes;
        all.failed += t.failed;
    }
    const double audio_s = double(all.audio_bytes) / 2 / runtime.engine().sample_rate();
    const int requests = clients * options.requests_per_client;
    nlohmann::json row{{"clients", clients},
                       {"sessions", server_options.sessions},
                       {"requests", requests},
                       {"failed", all.failed},
                       {"wall_s", wall_s},
                       {"cpu_s", cpu_s},
                       {"audio_s", audio_s},
                       {"audio_s_per_s", audio_s / wall_s},
                       {"requests_per_s", requests / wall_s},
                       {"peak_rss_mib", peak_rss_mib()},
                       {"syntheses", syntheses}};
    for (const EngineSetting &setting : engine_settings_table())
        if (setting.shared_services) row[setting.name] = setting.get(options.shared);
    if (!all.ttfb_ms.empty()) {
        const Spread ttfb = spread_of(all.ttfb_ms);
        row["ttfb_ms"] = {{"min", ttfb.min},
                          {"median", ttfb.median},
                          {"mean", ttfb.mean},
                          {"max", *std::max_element(all.ttfb_ms.begin(), all.ttfb_ms.end())}};
    }
    return row;
}

} // namespace

nlohmann::json run_server_bench(const BackendOptions &backend, const ServerBenchArguments &options) {
    if (options.requests_per_client < 1) fail("server bench: --requests is ", options.requests_per_client);
    PipelineModelOptions engine_options;
    engine_options.model_path = options.weights;
    engine_options.backend = backend;
    engine_options.backend.threads = options.session_threads;
    EngineSettings shared = options.shared;
    shared.backend = backend.device;
    const RuntimeOptions runtime_options = shared.runtime_options(); // checked before the weights load
    const PipelineModel engine(engine_options);
    Runtime runtime(engine, runtime_options);
    nlohmann::json rows = nlohmann::json::array();
    for (int clients : options.clients) {
        if (clients < 1) fail("server bench: --clients ", clients, ", expected 1 or more");
        rows.push_back(run_level(runtime, options, clients));
    }
    return rows;
}

} // namespace chatterbox::bench
