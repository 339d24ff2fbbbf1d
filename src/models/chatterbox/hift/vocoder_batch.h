#pragma once
// Batching of the HiFT vocoder across requests. VocoderSessions hand their mels (a streaming window or a
// whole piece) to one scheduler thread, which vocodes the ones waiting together: one F0 graph and
// one generator graph over all of them, each mel padded to the longest and masked
// (vocoder_graphs.h), so each request gets the wave it gets alone (within the f32 rounding of
// differently shaped matrix products); the source between the two graphs is computed per request.
// A vocoder run is one pass, so requests join only between runs: the oldest waiting request
// opens a run, and others join it, in arrival order, while the padding and the memory allow.
// Streaming windows of one plan have one length, so they batch without padding.
//
//   VocoderBatch batch(model, backend_options, {.max_requests = 4});
//   VocoderSession vocoder(model, backend, &batch, &cancel);   // its synthesize() vocodes in the batch

#include "core/backend.h"
#include "core/batch_loop.h"
#include "core/cancel.h"
#include "models/chatterbox/hift/vocoder.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace chatterbox::hift {

struct VocoderBatchOptions {
    int max_requests = 4; // mels vocoded together
    // A request joins a run only while the run's padded frames (requests x the longest) stay within
    // (1 + max_padding) x its frames and within max_frames (0: the model's max_frames, the memory
    // of one longest mel alone).
    double max_padding = 0.25;
    int64_t max_frames = 0;
};

struct VocoderBatchRequest;

class VocoderBatch : private BatchLoop<VocoderBatchRequest> {
  public:
    // The scheduler's own backend (device, threads) computes the batch.
    VocoderBatch(const VocoderModel &model, const BackendOptions &backend, const VocoderBatchOptions &options);
    ~VocoderBatch() override; // finishes the requests in flight

    // f0, source and raw wave (before trim_fade) of one mel (80, T) with this source noise, as a
    // VocoderSession gives them alone. Thread-safe. Throws Error for a bad mel or noise (the batch is not
    // touched); cancel (optional) is polled while the request waits: a cancelled request leaves
    // and this throws Cancelled.
    VocoderTaps vocode(const std::vector<float> &mel, const SourceNoise &noise, const CancelFlag *cancel = nullptr);

    using BatchLoop::counts; // steps: vocoder runs; request_steps: the mels they vocoded
    const VocoderBatchOptions &options() const { return options_; }

  private:
    void round() override;
    void admit_waiting();
    void run_batch();

    const VocoderModel &model_;
    VocoderBatchOptions options_;
    Backend backend_;
    std::unique_ptr<VocoderGraphs> graphs_; // for the last run's lengths
};

} // namespace chatterbox::hift
