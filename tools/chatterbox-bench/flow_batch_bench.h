#pragma once
// The flow's CFM steps batched across requests (s3gen/flow_batch.h): for each concurrency level N,
// N requests of different lengths (a random voice prompt, random speech tokens) solve their
// 10 (Turbo: 2) Euler steps one after another, each alone on one session, then all at once in a
// FlowBatch of size N, interleaved in one run. The ratio sequential / batched wall time
// is the batching gain for the same mel.

#include "core/backend.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace chatterbox::bench {

struct FlowBatchBenchArguments {
    std::string weights;
    std::vector<int> levels{1, 2, 4}; // concurrent requests, one run each
    int tokens = 100;                 // speech tokens of the first request; the k-th has 10 % more per k
    int prompt_tokens = 150;          // of the voice prompt (the golden case's)
    int rounds = 1;                   // the levels are run this many times, interleaved
};

// One JSON row per run: "requests", "round", "mel_s" (seconds of mel the requests make),
// "sequential_s", "batched_s", "ratio" (sequential / batched), "mean_occupancy" (requests per
// estimator run), "max_difference" (batched mel against the sequential one).
nlohmann::json run_flow_batch_bench(const BackendOptions &backend, const FlowBatchBenchArguments &options);

} // namespace chatterbox::bench
