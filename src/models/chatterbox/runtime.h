#pragma once
// The services that the sessions of one PipelineModel share, beside the immutable model
// (pipeline_model.h): the T3Batch, FlowBatch and VocoderBatch (each a scheduler with its own thread
// and backend) and the kept voice prefixes. A PipelineSession takes what it uses once, when it is
// made (pipeline_session.h); sessions made from the PipelineModel alone use none and compute
// everything on their own backends.
//
//   PipelineModel engine(engine_options);   // weights, text front end: read-only
//   Runtime runtime(engine, {.batch = 8});  // shared, thread-safe services
//   PipelineSession session(runtime);       // one per concurrent request stream
//
// The Runtime must outlive its sessions, and the PipelineModel the Runtime.

#include "core/backend.h"
#include "models/chatterbox/hift/vocoder_batch.h"
#include "models/chatterbox/s3gen/flow_batch.h"
#include "models/chatterbox/t3/batch.h"
#include "models/chatterbox/t3/prefix_cache.h"

#include "ggml.h"

#include <memory>

namespace chatterbox {

class PipelineModel;

struct RuntimeOptions {
    // T3 decode batched across the sessions' requests (t3/batch.h): up to this many
    // requests share each step; 0 (default): each session decodes alone.
    int batch = 0;
    int batch_capacity = 1536; // cache positions per batched request (longer ones decode alone)
    // The flow's CFM steps batched across the sessions' requests (s3gen/flow_batch.h): up to this
    // many requests share each estimator run; 0 (default): each session solves alone.
    int flow_batch = 0;
    // The vocoder batched across the sessions' requests (hift/vocoder_batch.h): up to this many
    // mels share each HiFT run; 0 (default): each session vocodes alone.
    int vocoder_batch = 0;
    // CPU threads of each batch's own backend (T3, flow, vocoder); 0 (default): all cores. Not the
    // sessions' threads: a batch computes for many sessions at once, and gives threads back while
    // sessions keep CPUs busy (BackendOptions::adapt_threads).
    int batch_threads = 0;
    // Voices whose T3 conditioning prefix (its keys/values) is kept, so that a request in a kept
    // voice prefills only its text (t3/prefix_cache.h); 0 (default): every prefill computes it.
    int voice_prefixes = 0;
    // The T3 KV cache type of the batch (t3::RuntimeOptions::kv_type): f16, f32, or q8_0 on the CPU
    // (half the bytes a batched step reads; lossy). A session's requests join the batch only with the
    // same type: Runtime::session_options gives it.
    ggml_type kv_cache = GGML_TYPE_F16;

    // Throws InvalidArgument naming the first field out of range for an engine on `backend`; cheap,
    // so that front ends check before the weights load.
    void validate(const BackendOptions &backend) const;
};

struct PipelineSessionOptions;

class Runtime {
  public:
    // Validates the options, then starts the batches they ask for.
    Runtime(const PipelineModel &engine, const RuntimeOptions &options);
    ~Runtime(); // waits for the batches' requests in flight
    Runtime(const Runtime &) = delete;
    Runtime &operator=(const Runtime &) = delete;

    const PipelineModel &engine() const { return engine_; }
    const RuntimeOptions &options() const { return options_; }

    // Each nullptr when its option is 0 (or the engine lacks the component).
    t3::T3Batch *t3_batch() const { return t3_batch_.get(); }
    s3gen::FlowBatch *flow_batch() const { return flow_batch_.get(); }
    hift::VocoderBatch *vocoder_batch() const { return vocoder_batch_.get(); }
    t3::PrefixCache *t3_prefixes() const { return t3_prefixes_.get(); }

    // The options of a session whose requests can join the T3 batch: its KV cache type (a request
    // of another type decodes alone).
    PipelineSessionOptions session_options() const;

  private:
    const PipelineModel &engine_;
    RuntimeOptions options_;
    std::unique_ptr<t3::T3Batch> t3_batch_;
    std::unique_ptr<s3gen::FlowBatch> flow_batch_;
    std::unique_ptr<hift::VocoderBatch> vocoder_batch_;
    std::unique_ptr<t3::PrefixCache> t3_prefixes_;
};

} // namespace chatterbox
