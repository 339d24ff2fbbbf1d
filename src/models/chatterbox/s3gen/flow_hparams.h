#pragma once
// Hyper-parameters of the S3Gen flow (spec s3gen.md §1, §4–§6): speech-token embedding, the
// upsampling conformer encoder, the UNet-1D estimator and the CFM solver. Metadata keys
// "chatterbox.s3gen.*" (FlowHParams::fields()).

#include "models/chatterbox/hparam_fields.h"

#include <cstdint>
#include <string>

namespace chatterbox {
class WeightStore;
}

namespace chatterbox::s3gen {

struct FlowHParams {
    // Token embedding and speaker projection (flow.py CausalMaskedDiffWithXvec).
    int64_t vocab = 6561;
    int64_t mel_bins = 80;
    int64_t speaker_dim = 192; // CAMPPlus x-vector
    int64_t token_mel_ratio = 2;

    // UpsampleConformerEncoder (upsample_encoder.py).
    int64_t encoder_dim = 512;
    int encoder_heads = 8;
    int64_t encoder_ffn = 2048;
    int encoder_blocks = 6;
    int encoder_up_blocks = 4;
    int pre_lookahead = 3;
    float embed_norm_eps = 1e-5f;      // embed.out.1, up_embed.out.1, after_norm
    float conformer_norm_eps = 1e-12f; // norm_mha, norm_ff of every conformer layer
    float leaky_relu_slope = 0.01f;    // PreLookaheadLayer: F.leaky_relu default

    // ConditionalDecoder (decoder.py): one down level, 12 mid blocks, one up level.
    int64_t decoder_channels = 256;
    int decoder_heads = 8;
    int64_t decoder_head_dim = 64;
    int decoder_transformer_blocks = 4; // after every resnet block
    int decoder_mid_blocks = 12;
    int64_t decoder_ffn_mult = 4; // diffusers FeedForward mult
    int decoder_conv_kernel = 3;  // CausalConv1d kernel
    float decoder_norm_eps = 1e-5f;

    // CFM solver (flow_matching.py, configs.py CFM_PARAMS).
    int cfm_steps = 10;
    double cfg_rate = 0.7;      // a Python float in the reference: 1 + rate and rate are rounded to f32 separately
    float time_scale = 1000.0f; // SinusoidalPosEmb scale

    // Longest prompt + generated token sequence accepted: the official pipelines stay below
    // 250 prompt + 1000 generated tokens; the encoder's relative-position scores grow with its square.
    int64_t max_total_tokens = 1500;

    int64_t decoder_in() const { return 4 * mel_bins; }        // [x, mu, speaker, prompt condition]
    int64_t time_sinusoid_dim() const { return decoder_in(); } // SinusoidalPosEmb(in_channels)
    int64_t time_embed_dim() const { return 4 * decoder_channels; }
    int64_t decoder_inner_dim() const { return decoder_heads * decoder_head_dim; }
    int64_t conditioning_channels() const { return 3 * mel_bins; } // mu, speaker, prompt condition
    int upsample_stride() const { return int(token_mel_ratio); }

    // The English / multilingual / VC configuration.
    static FlowHParams standard() { return {}; }
    // The standard configuration with the sizes the flow checkpoint in store under prefix
    // ("s3gen.flow.") declares by its tensor shapes.
    static FlowHParams from_checkpoint(const WeightStore &store, const std::string &prefix);

    static const HparamTable<FlowHParams> &fields();
    // The field rules, then the rules between fields; throws Error naming the keys.
    void validate() const;
};

} // namespace chatterbox::s3gen
