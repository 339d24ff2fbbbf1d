#pragma once
// The vocoder batched across requests (hift/vocoder_batch.h): for each concurrency level N, N mels
// are vocoded one after another, each alone on one VocoderSession, then all at once through a
// VocoderBatch of size N (queued behind a 10-frame opener, so they make one run),
// interleaved in one run. Two kinds of batch per level: mels of
// one length (the streaming windows of one plan: 116 frames = a 50-token chunk and 8 frames of
// context on each side) and mels 10 % longer each (whole pieces, padded to the longest). The ratio
// sequential / batched wall time is the batching gain for the same waves.

#include "core/backend.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::bench {

struct VocoderBatchBenchArguments {
    std::string weights;
    std::vector<int> levels{1, 2, 4}; // concurrent requests, one run each
    int64_t frames = 116;             // mel frames of the first request
    int rounds = 1;                   // the levels are run this many times, interleaved
};

// One JSON row per run: "requests", "lengths" ("equal" or "varied"), "round", "audio_s" (seconds of
// audio the requests make), "sequential_s", "batched_s", "ratio" (sequential / batched),
// "mean_occupancy" (requests per vocoder run, the opener's left out), "max_difference" (batched wave against the
// sequential one).
nlohmann::json run_vocoder_batch_bench(const BackendOptions &backend, const VocoderBatchBenchArguments &options);

} // namespace chatterbox::bench
