#pragma once
// The flow's velocity estimator, ConditionalDecoder (spec s3gen.md §5): a UNet-1D with one
// down level (resnet 320->256 + 4 transformer blocks + causal conv), 12 mid levels (resnet +
// 4 transformer blocks) and one up level (skip concat, resnet 512->256 + 4 transformer blocks +
// causal conv), then CausalBlock1D and a 1x1 projection to 80 mel bins. The time step enters
// through the sinusoidal embedding + MLP added inside every resnet block.

#include "core/module_weights.h"
#include "models/chatterbox/s3gen/estimator_blocks.h"
#include "models/chatterbox/s3gen/flow_hparams.h"

#include <string>
#include <vector>

namespace chatterbox::s3gen {

class Estimator {
  public:
    Estimator() = default;
    // Binds every tensor under `<prefix>.` ("decoder.estimator").
    Estimator(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp);

    // x: f32 ggml [80, T, R] (the current sample of every row); conditioning: ggml [240, T, R]
    // (mu, speaker broadcast over T, prompt mel — zeros in the unconditional row); sinusoid:
    // ggml [320, 1] = timestep_sinusoid(t), shared by the rows. Returns the velocity ggml [80, T, R].
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *conditioning, ggml_tensor *sinusoid,
                            nn::AttentionPath attention) const;

  private:
    TimeEmbedding time_mlp_;
    ResnetStage down_;
    FrameConv1d down_conv_; // the last level's "downsample" is a causal conv (length kept)
    std::vector<ResnetStage> mid_;
    ResnetStage up_;
    FrameConv1d up_conv_;
    CausalBlock final_block_;
    FrameConv1d final_proj_; // 1x1
};

} // namespace chatterbox::s3gen
