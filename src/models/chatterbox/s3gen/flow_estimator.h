#pragma once
// The flow's velocity estimator, ConditionalDecoder (spec s3gen.md §5): a UNet-1D with one
// down level (resnet 320->256 + 4 transformer blocks + causal conv), 12 mid levels (resnet +
// 4 transformer blocks) and one up level (skip concat, resnet 512->256 + 4 transformer blocks +
// causal conv), then CausalBlock1D and a 1x1 projection to 80 mel bins. The time step enters
// through the sinusoidal embedding + MLP added inside every resnet block; the mean-flow estimator
// embeds the step's start and end times (t, r) alike and mixes the pair with time_embed_mixer.

#include "modules/module_weights.h"
#include "models/chatterbox/s3gen/estimator_blocks.h"
#include "models/chatterbox/s3gen/flow_hparams.h"

#include <string>
#include <vector>

namespace chatterbox::s3gen {

// Intermediate time tensors of one estimator graph, for inspection.
struct EstimatorTimeTaps {
    ggml_tensor *time_mlp = nullptr;       // ggml [1024, P, S]: time_mlp of each time (t, then r)
    ggml_tensor *time_embedding = nullptr; // ggml [1024, 1, S]: what the resnet blocks receive
};

class Estimator {
  public:
    Estimator() = default;
    // Binds every tensor under `<prefix>.` ("decoder.estimator").
    Estimator(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp);

    // x: f32 ggml [80, T, R] (the current sample of every row); conditioning: ggml [240, T, R]
    // (mu, speaker broadcast over T, prompt mel — zeros in the unconditional row); sinusoids:
    // ggml [320, P, S] = timestep_sinusoid of t (P = 1) or of t and r (P = 2, mean flow), shared by
    // the rows (S = 1) or one per row (S = R); segments: the rows' requests when several are
    // batched (estimator_blocks.h). Returns the velocity ggml [80, T, R]; taps (optional) receives
    // the time tensors.
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *conditioning, ggml_tensor *sinusoids,
                            nn::AttentionPath attention, EstimatorTimeTaps *taps = nullptr,
                            const AttentionSegments &segments = {}) const;

  private:
    int64_t time_points_ = 1; // P
    TimeEmbedding time_mlp_;
    nn::Linear time_mixer_; // time_embed_mixer, mean flow only
    ResnetStage down_;
    FrameConv1d down_conv_; // the last level's "downsample" is a causal conv (length kept)
    std::vector<ResnetStage> mid_;
    ResnetStage up_;
    FrameConv1d up_conv_;
    CausalBlock final_block_;
    FrameConv1d final_proj_; // 1x1
};

} // namespace chatterbox::s3gen
