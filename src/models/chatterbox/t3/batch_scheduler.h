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
#include "core/batch_loop.h"
#include "models/chatterbox/t3/generate.h"

#include <memory>

namespace chatterbox::t3 {

class BatchSession;

struct BatchOptions {
    int max_sequences = 4; // requests decoded together (a CFG request takes two cache rows)
    int capacity = 1536;   // cache positions per request: prefill + new tokens
    RuntimeOptions runtime;
};

struct BatchRequest;

class BatchScheduler : private BatchLoop<BatchRequest> {
  public:
    // The scheduler's own backend (device, threads) computes the batch.
    BatchScheduler(const Model &model, const BackendOptions &backend, const BatchOptions &options);
    ~BatchScheduler() override; // waits for the requests in flight

    // As generate(session, ...) in generate.h, with the decode steps in the batch; thread-safe.
    GenerationResult generate(Session &session, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens,
                              const SamplingParams &params, const GenerationHooks &hooks = {},
                              const KvPrefix *prefix = nullptr);

    using BatchLoop::counts; // waiting: prefilled requests waiting for room; steps: decode steps
    const BatchOptions &options() const { return options_; }

  private:
    void round() override;
    void admit_waiting();
    void step_batch();

    // While it lives, one more request prefills beside the batch (Backend::reserve_cpus).
    class PrefillBeside {
      public:
        explicit PrefillBeside(BatchScheduler &batch);
        ~PrefillBeside();
        PrefillBeside(const PrefillBeside &) = delete;
        PrefillBeside &operator=(const PrefillBeside &) = delete;

      private:
        BatchScheduler &batch_;
    };

    const Model &model_;
    BatchOptions options_;
    Backend backend_;
    std::unique_ptr<BatchSession> batch_;
};

} // namespace chatterbox::t3
