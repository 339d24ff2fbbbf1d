#pragma once
// T3 decode batched across requests (t3/batch.h): for each concurrency level N, N
// requests (own thread and session each, forced tokens so none ends early) decode in a
// batch of N; the aggregate decode throughput is the tokens all of them took while all N were in
// the batch, per second of that window. Level 1 is the single request's rate, so the ratios
// beside it are the batching gain. Optionally a late joiner's prefill is timed against the
// others' steps: does a newcomer stall the batch?

#include "core/backend.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace chatterbox::bench {

struct BatchBenchArguments {
    std::string weights;
    std::vector<int> levels{1, 2, 4, 8}; // concurrent requests, one run each
    // Tokens per request after its prefill: requests that start together prefill one after another
    // (in parts between the batch's steps), so 8 need ~250 for a window with all of them in the batch.
    int decode_tokens = 270;
    int text_tokens = 55;
    int prompt_tokens = 150;
    float cfg_weight = 0.5f;
    int rounds = 1; // the levels are run this many times, interleaved
    // Per level, a second run in which one more request prefills once the others have taken a third
    // of their tokens, and joins: its prefill time beside the others' step times.
    bool late_joiner = false;
    std::string kv_cache = "f16"; // the requests' and the batch's T3 KV cache type (t3::kv_cache_type)
};

// One JSON row per run: "requests", "round", "window_s", "tokens", "tokens_per_s", "ratio_to_single"
// (against level 1 of the same round, when it ran), "mean_occupancy" (requests per batch step), "cpu_s";
// with late_joiner, "join" {"prefill_ms", "median_step_ms" (the others' before it), "longest_step_ms"
// (theirs while it prefilled and joined), "longest_in_steps" (the two's ratio)}.
nlohmann::json run_batch_bench(const BackendOptions &backend, const BatchBenchArguments &options);

} // namespace chatterbox::bench
