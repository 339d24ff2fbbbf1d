#pragma once
// The upsampling conformer encoder of the S3Gen flow (spec s3gen.md §4, upsample_encoder.py):
// token embeddings (one frame per token) -> linear embed -> pre-lookahead convs -> 6 conformer
// layers -> nearest x2 upsample + causal conv -> linear embed -> 4 conformer layers -> LayerNorm,
// i.e. ggml [512, Tt] -> ggml [512, 2·Tt]. Attention is bidirectional over the whole sequence
// (batch 1, no padding, static_chunk_size 0).

#include "models/chatterbox/s3gen/flow_hparams.h"
#include "models/chatterbox/s3gen/frame_conv.h"
#include "modules/feed_forward.h"
#include "modules/linear.h"
#include "modules/module_weights.h"
#include "modules/norm.h"
#include "modules/rel_pos_attention.h"

#include <string>
#include <vector>

namespace chatterbox::s3gen {

// LinearNoSubsampling + EspnetRelPositionalEncoding's input scaling: LayerNorm(Linear(x)) * sqrt(d).
struct LinearEmbed {
    nn::Linear linear;  // out.0
    nn::LayerNorm norm; // out.1
    float scale = 1.0f;

    LinearEmbed() = default;
    LinearEmbed(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
};

// PreLookaheadLayer: each output frame sees input frames t-2 ... t+3 (for lookahead 3).
struct PreLookahead {
    FrameConv1d conv1; // k = lookahead + 1, right padding lookahead
    FrameConv1d conv2; // k = 3, left padding 2
    float slope = 0.01f;

    PreLookahead() = default;
    PreLookahead(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
};

// ConformerEncoderLayer with normalize_before, no macaron FFN, no conv module:
// x += MHA_rel(LN_mha(x)); x += FFN(LN_ff(x)), FFN = w_2(SiLU(w_1(.))).
struct ConformerLayer {
    nn::LayerNorm norm_mha, norm_ff;
    nn::RelPositionAttention attention;
    nn::FeedForward feed_forward;

    ConformerLayer() = default;
    ConformerLayer(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *pos_table,
                            nn::AttentionPath attention) const;
};

// Upsample1D of the encoder: nearest-neighbour repeat xS, left-pad 2S zeros, Conv1d(k = 2S+1).
struct EncoderUpsample {
    FrameConv1d conv;
    int stride = 2;

    EncoderUpsample() = default;
    EncoderUpsample(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const; // ggml [C, T] -> [C, S·T]
};

class ConformerEncoder {
  public:
    ConformerEncoder() = default;
    // Binds every tensor under `<prefix>.` ("encoder").
    ConformerEncoder(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp);

    // tokens: f32 ggml [D, Tt] (embedded speech tokens); token_positions: ggml [D, 2Tt-1] and
    // frame_positions: ggml [D, 2·S·Tt-1] (nn::espnet_rel_pos_table). Returns ggml [D, S·Tt].
    // `attention`: how the layers' attention is computed (nn::RelPositionAttention).
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *tokens, ggml_tensor *token_positions,
                            ggml_tensor *frame_positions, nn::AttentionPath attention = nn::AttentionPath::plain) const;

  private:
    LinearEmbed embed_, up_embed_;
    PreLookahead pre_lookahead_;
    std::vector<ConformerLayer> layers_, up_layers_;
    EncoderUpsample upsample_;
    nn::LayerNorm after_norm_;
};

} // namespace chatterbox::s3gen
