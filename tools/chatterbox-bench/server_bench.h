#pragma once
// chatterbox-server under N concurrent clients: the server in-process on a loopback port with N
// sessions (one PipelineModel), N client threads (httplib's client) each sending the same number of
// streamed pcm requests. Per level: the time to the first byte of audio (from sending the request),
// the aggregate throughput (seconds of audio per wall second, all clients together), requests per
// second and the process's CPU time.

#include "core/backend.h"
#include "models/chatterbox/engine_settings.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace chatterbox::bench {

struct ServerBenchArguments {
    std::string weights;                // a model folder or GGUF
    std::vector<int> clients{1, 4, 16}; // concurrency levels, one run each
    int requests_per_client = 2;        // bounded: each level sends clients x this many
    int sessions = 0;                   // 0: as many as clients
    int session_threads = 1;            // CPU threads per session
    // The batches, their threads, the kept voice prefixes and the KV cache type, as the server's flags of
    // the same names (the engine's table; its model, device and threads are the fields above).
    EngineSettings shared;
    int max_new_tokens = 50; // T3 tokens per request (fixes the work with ignore_eos)
    bool ignore_eos = true;
    std::string text = "The quick brown fox jumps over the lazy dog.";
};

// One JSON row per level: "clients", "sessions", the shared settings ("batch" ... "kv_cache"), "requests", "wall_s",
// "cpu_s", "audio_s", "audio_s_per_s", "requests_per_s", "ttfb_ms" {min, median, mean, max}, "failed", "peak_rss_mib".
nlohmann::json run_server_bench(const BackendOptions &backend, const ServerBenchArguments &options);

} // namespace chatterbox::bench
