#pragma once
// Continuous batching of T3 decode across requests. One scheduler thread runs rounds: a part of the
// first newcomer's prefill (on the newcomer's own T3Session), then one decode step of every joined
// request in one graph (a T3BatchDecoder); each request's Generation takes its token (its own sampler,
// seed, guards), so a request gives the tokens it gives alone. A prefill part computes the rows of a
// full batch step (2 x max_sequences), so a newcomer delays the others' next step by
// about one full step, however long its prompt; while no request decodes, it prefills at once. It joins
// when its prefill is complete (its cache rows copied into the batch); requests leave at token
// boundaries, and one that ends, stops or is cancelled frees its rows at that step. Hooks run on the
// caller's thread (their records are copied over), so streaming work there never holds up the batch.
//
//   T3Batch batch(model, backend_options, {.max_sequences = 8});
//   GenerationResult r = batch.generate(session, cond, text_tokens, params, hooks); // from many threads
//
// Requests the batch cannot take run alone on their session, as generate() does: the alignment
// analyzer (it watches attention heads), and requests longer than the batch's capacity.

#include "core/backend.h"
#include "core/batch_loop.h"
#include "core/cancel.h"
#include "core/worker_pool.h"
#include "models/chatterbox/t3/generate.h"

#include <atomic>
#include <memory>

namespace chatterbox::t3 {

class T3BatchDecoder;

struct BatchOptions {
    int max_sequences = 4; // requests decoded together (a CFG request takes two cache rows)
    int capacity = 1536;   // cache positions per request: prefill + new tokens
    RuntimeOptions runtime;
};

struct BatchRequest;

// Where the batch's thread spent its time since start, in seconds: decode steps (inputs, the graph,
// the logits back), the requests' samplers and guards after them, and newcomers' prefill parts.
struct BatchTimes {
    double decode_s = 0, sample_s = 0, prefill_s = 0;
};

class T3Batch : private BatchLoop<BatchRequest> {
  public:
    // The scheduler's own backend (device, threads) computes the batch.
    T3Batch(const T3Model &model, const BackendOptions &backend, const BatchOptions &options);
    ~T3Batch() override; // waits for the requests in flight

    // As generate(session, ...) in generate.h, with the decode steps in the batch; thread-safe. The
    // prefill's parts run on the batch's backend, which the session's cancel flag does not reach:
    // `cancel`, once requested, ends the request with Cancelled before its next part.
    GenerationResult generate(T3Session &session, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens,
                              const SamplingParams &params, const GenerationHooks &hooks = {},
                              const KvPrefix *prefix = nullptr, const CancelFlag *cancel = nullptr);

    using BatchLoop::counts; // waiting: requests prefilling or waiting for room; steps: decode steps
    uint64_t prefill_parts() const { return prefill_parts_.load(); } // prefill parts run since start
    BatchTimes times() const;
    const BatchOptions &options() const { return options_; }

  private:
    void round() override;
    void prefill_next();
    void step_batch();

    const T3Model &model_;
    BatchOptions options_;
    Backend backend_;
    std::unique_ptr<T3BatchDecoder> batch_;
    WorkerPool samplers_; // the requests' samplers after a step, in parallel
    std::atomic<uint64_t> prefill_parts_{0};
    std::atomic<int64_t> decode_ns_{0}, sample_ns_{0}, prefill_ns_{0};
};

} // namespace chatterbox::t3
