#pragma once
// The S3Gen flow, speech tokens -> 80-bin log-mel (spec s3gen.md §3, flow.py
// CausalMaskedDiffWithXvec.inference with finalize=True):
//
//   speaker = Linear(normalize(x-vector))                       (80)
//   tokens  = [prompt tokens | generated tokens]                Tt = Np + N
//   mu      = encoder_proj(encoder(embedding(tokens)))           (80, 2·Tt)
//   cond    = prompt mel in the first F frames, zeros after      (80, 2·Tt)
//   mel     = CFM(noise, mu, speaker, cond)[:, F:]               (80, 2·Tt − F)
//
// FlowModel holds the immutable weights (shareable); FlowSession holds the per-request graphs.
//
// Tensors: every `flow.*` tensor of the official s3gen.safetensors (1121, manifest.json) is used;
// none is ignored. A mean-flow (Turbo) checkpoint's extra `flow.decoder.estimator.time_embed_mixer.weight`
// is bound when hp.mean_flow (FlowHParams::from_checkpoint sets it by that tensor's presence).

#include "core/backend.h"
#include "core/cancel.h"
#include "modules/module_weights.h"
#include "core/weight_store.h"
#include "models/chatterbox/s3gen/flow_cfm.h"
#include "models/chatterbox/s3gen/flow_encoder.h"
#include "models/chatterbox/s3gen/flow_estimator.h"
#include "models/chatterbox/s3gen/flow_hparams.h"
#include "modules/embedding.h"
#include "modules/linear.h"

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace chatterbox::s3gen {

// What S3Gen keeps of the reference voice (embed_ref's ref_dict).
struct FlowReference {
    std::vector<int32_t> prompt_tokens; // (Np) S3 speech tokens of the reference
    std::vector<float> prompt_mel;      // (F, 80) prompt_feat, frame-major
    std::vector<float> xvector;         // (192) CAMPPlus embedding
};

// The encoder side of one call.
struct FlowEncoding {
    int64_t tokens = 0;         // Tt = Np + N
    int64_t frames = 0;         // 2·Tt
    std::vector<float> speaker; // (80) projected x-vector
    std::vector<float> hidden;  // (frames, 512) encoder output, before encoder_proj
    std::vector<float> mu;      // (80, frames)
};

// A mel spectrogram, PyTorch order (80, frames).
struct Mel {
    int64_t frames = 0;
    std::vector<float> values;
};

// The frames after the first prompt_frames of a full CFM result (mel_bins, frames): the
// reference's feat[:, :, F:].
Mel generated_part(const std::vector<float> &full, int64_t mel_bins, int64_t frames, int64_t prompt_frames);

// The tokens the flow speaks for one piece: its generated speech tokens (what T3's
// drop_invalid_tokens keeps) followed by hp.trailing_silence_tokens S3GEN_SIL tokens (tts_turbo.py
// appends three so the mean-flow decoder ends the piece in silence; the standard flow none).
std::vector<int32_t> flow_input_tokens(std::vector<int32_t> speech_tokens, const FlowHParams &hp);

class FlowBatch;

class FlowModel {
  public:
    // Binds every tensor under prefix ("s3gen.flow."): all problems (missing, mis-shaped,
    // unexpected) in one Error. The store may be dropped afterwards.
    FlowModel(const WeightStore &store, Backend &backend, const FlowHParams &hp,
              const std::string &prefix = "s3gen.flow.");
    FlowModel(const FlowModel &) = delete;
    FlowModel &operator=(const FlowModel &) = delete;

    const FlowHParams &hparams() const { return hp_; }
    size_t weight_bytes() const { return weights_.bytes(); }
    // How many weights each matmul kernel took (ModuleWeights::matmul_kernel_counts).
    std::map<std::string, int> matmul_kernel_counts() const { return weights_.matmul_kernel_counts(); }

    const nn::Embedding &token_embedding() const { return token_embedding_; }
    const nn::Linear &speaker_projection() const { return speaker_projection_; }
    const ConformerEncoder &encoder() const { return encoder_; }
    const nn::Linear &encoder_projection() const { return encoder_projection_; }
    const Estimator &estimator() const { return estimator_; }

  private:
    FlowHParams hp_;
    ModuleWeights weights_;
    nn::Embedding token_embedding_; // input_embedding
    nn::Linear speaker_projection_; // spk_embed_affine_layer
    ConformerEncoder encoder_;
    nn::Linear encoder_projection_; // encoder_proj
    Estimator estimator_;           // decoder.estimator
};

class FlowSession {
  public:
    // backend: where this session's graphs run (one per session). batch: where solve() steps
    // (flow_batch.h), polling cancel (optional) between steps; nullptr: alone, on this session's backend.
    FlowSession(const FlowModel &model, Backend &backend, nn::AttentionPath attention = default_estimator_attention(),
                FlowBatch *batch = nullptr, const CancelFlag *cancel = nullptr);

    // Throws Error for an empty token list, a token id outside [0, vocab) (generated or prompt),
    // more than max_total_tokens tokens in all, a prompt mel that is not whole 80-bin frames or
    // covers every output frame, an x-vector of the wrong size, or non-finite values.
    void validate(const std::vector<int32_t> &tokens, const FlowReference &reference) const;

    // Speaker projection and encoder over [prompt tokens | tokens] (validates first).
    FlowEncoding encode(const std::vector<int32_t> &tokens, const FlowReference &reference);
    // (80, frames): the prompt mel in its first frames, zeros after.
    std::vector<float> prompt_condition(const FlowReference &reference, int64_t frames) const;
    // The estimator graph for this frame count: built on first use, then reused.
    EstimatorGraph &estimator_graph(int64_t frames);

    // Euler steps of solve() from now on: cfm_steps(hp, steps) (0, the default: the model's own).
    // Throws Error outside [0, kMaxCfmSteps].
    void set_cfm_steps(int steps);

    // The full CFM result (80, frames) from the initial noise (80, frames), prompt region included.
    // In a batch the observer runs on the batch's thread.
    std::vector<float> solve(const FlowEncoding &encoding, const FlowReference &reference, std::vector<float> noise,
                             const CfmStepObserver &observer = {});

    // Generated mel (80, 2·Tt − F). noise: (80, 2·Tt) recorded or drawn by the caller.
    Mel generate(const std::vector<int32_t> &tokens, const FlowReference &reference, std::vector<float> noise);
    // The same with the noise drawn from rng (N(0, 1), standard_normal).
    Mel generate(const std::vector<int32_t> &tokens, const FlowReference &reference, std::mt19937_64 &rng);

  private:
    const FlowModel &model_;
    Backend &backend_;
    nn::AttentionPath attention_;
    std::unique_ptr<EstimatorGraph> estimator_graph_; // the last length used
    FlowBatch *const batch_;
    const CancelFlag *const batch_cancel_;
    int cfm_steps_ = 0; // requested; 0: the model's own
};

} // namespace chatterbox::s3gen
