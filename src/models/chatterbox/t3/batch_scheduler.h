#pragma once
// Continuous batching of T3 decode across requests. Each request prefills on its own Session (on
// the caller's thread, so a newcomer's prefill runs beside the batch instead of stalling it), then
// joins a BatchSession that one scheduler thread steps: every step decodes all joined requests in
// one graph, and each request's Generation takes its token (its own sampler, seed, guards), so a
// request gives the tokens it gives alone. Requests join and leave at token boundaries; one that
// ends, stops or is cancelled frees its rows at that step. Hooks run on the caller's thread
// (their records are copied over), so streaming work there never holds up the batch.
//
//   BatchScheduler batch(model, backend_options, {.max_sequences = 8});
//   GenerationResult r = batch.generate(session, cond, text_tokens, params, hooks); // from many threads
//
// Requests the batch cannot take run alone on their session, as generate() does: the alignment
// analyzer (it watches attention heads), and requests longer than the batch's capacity.

#include "core/backend.h"
#include "models/chatterbox/t3/generate.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace chatterbox::t3 {

class BatchSession;

struct BatchOptions {
    int max_sequences = 4; // requests decoded together (a CFG request takes two cache rows)
    int capacity = 1536;   // cache positions per request: prefill + new tokens
    RuntimeOptions runtime;
};

// Occupancy since start: steps run, and the requests each of them decoded.
struct BatchStats {
    int active = 0;  // requests in the batch now
    int waiting = 0; // prefilled requests waiting for room
    uint64_t steps = 0, sequence_steps = 0;
};

class BatchScheduler {
  public:
    // The scheduler's own backend (device, threads) computes the batch.
    BatchScheduler(const Model &model, const BackendOptions &backend, const BatchOptions &options);
    ~BatchScheduler(); // waits for the requests in flight
    BatchScheduler(const BatchScheduler &) = delete;
    BatchScheduler &operator=(const BatchScheduler &) = delete;

    // As generate(session, ...) in generate.h, with the decode steps in the batch; thread-safe.
    GenerationResult generate(Session &session, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens,
                              const SamplingParams &params, const GenerationHooks &hooks = {});

    BatchStats stats() const;
    const BatchOptions &options() const { return options_; }

  private:
    struct Request;
    void run();
    void admit_waiting();
    void step_batch();

    const Model &model_;
    BatchOptions options_;
    Backend backend_;
    std::unique_ptr<BatchSession> batch_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Request *> waiting_; // prefilled, in arrival order
    std::vector<Request *> active_; // in the batch (touched by the scheduler thread only)
    std::atomic<int> active_count_{0};
    std::atomic<uint64_t> steps_{0}, sequence_steps_{0};
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace chatterbox::t3
