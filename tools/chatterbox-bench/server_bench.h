#pragma once
// chatterbox-server under N concurrent clients: the server in-process on a loopback port with N
// sessions (one Engine), N client threads (httplib's client) each sending the same number of
// streamed pcm requests. Per level: the time to the first byte of audio (from sending the request),
// the aggregate throughput (seconds of audio per wall second, all clients together), requests per
// second and the process's CPU time.

#include "core/backend.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace chatterbox::bench {

struct ServerBenchOptions {
    std::string weights;                // a model folder or GGUF
    std::vector<int> clients{1, 4, 16}; // concurrency levels, one run each
    int requests_per_client = 2;        // bounded: each level sends clients x this many
    int sessions = 0;                   // 0: as many as clients
    int session_threads = 1;            // CPU threads per session
    int batch = 0;                      // T3 decode batched across up to N requests (0: off), as the server's --batch
    int flow_batch = 0;                 // the flow's CFM steps likewise, as the server's --flow-batch
    int vocoder_batch = 0;              // HiFT likewise, as the server's --vocoder-batch
    int batch_threads = 0;              // CPU threads of each batch (0: all cores), as the server's --batch-threads
    std::string kv_cache = "f16";       // the T3 KV cache type, as the server's --kv-cache
    int max_new_tokens = 50;            // T3 tokens per request (fixes the work with ignore_eos)
    bool ignore_eos = true;
    std::string text = "The quick brown fox jumps over the lazy dog.";
};

// One JSON row per level: "clients", "sessions", "batch", "flow_batch", "vocoder_batch", "requests", "wall_s", "cpu_s",
// "audio_s", "audio_s_per_s", "requests_per_s", "ttfb_ms" {min, median, mean, max}, "failed", "peak_rss_mib".
nlohmann::json run_server_bench(const BackendOptions &backend, const ServerBenchOptions &options);

} // namespace chatterbox::bench
