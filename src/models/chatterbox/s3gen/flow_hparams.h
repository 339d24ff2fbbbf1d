#pragma once
// Hyper-parameters of the S3Gen flow (spec s3gen.md §1, §4–§6): speech-token embedding, the
// upsampling conformer encoder, the UNet-1D estimator and the CFM solver. Metadata keys
// "chatterbox.s3gen.*" (FlowHParams::fields()). Two decoders share the code: the standard CFM
// (English, multilingual: 10 cosine-grid steps with CFG) and Turbo's distilled mean flow (2 linear
// steps, no CFG, the (t, r) time pair mixed by time_embed_mixer, three trailing silence tokens).

#include "models/chatterbox/hparam_fields.h"

#include <cstdint>
#include <string>

namespace chatterbox {
class WeightStore;
}

namespace chatterbox::s3gen {

constexpr int kMaxCfmSteps = 100; // the most Euler steps a request may ask for

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

    // CFM solver (flow_matching.py, configs.py CFM_PARAMS); a request may ask for other step counts
    // up to kMaxCfmSteps (flow_cfm.h cfm_steps).
    int cfm_steps = 10;
    int cfm_cosine_grid = 1; // 1: t_k = 1 - cos(pi/2 k/n) (t_scheduler "cosine"); 0: t_k = k/n (the mean flow's)
    // A Python float in the reference: 1 + rate and rate are rounded to f32 separately. 0: no CFG,
    // the estimator runs the conditional row alone (the mean flow was distilled with CFG outputs).
    double cfg_rate = 0.7;
    float time_scale = 1000.0f; // SinusoidalPosEmb scale
    // 1: mean flow (utils/intmeanflow.py): each step's start and end time (t, r) are embedded by
    // time_mlp and mixed by time_embed_mixer, Linear(2048 -> 1024, no bias); x += (r - t) v.
    // 0: the time embedding is time_mlp(t) alone. Set by the mixer tensor's presence.
    int mean_flow = 0;

    // S3GEN_SIL tokens appended to the speech tokens of each piece (tts_turbo.py: three, so the
    // mean-flow decoder ends the piece in silence; the standard pipelines append none).
    int trailing_silence_tokens = 0;
    int64_t silence_token = 4299; // S3GEN_SIL (s3gen/const.py)
    // mtl_tts.py's last-token trim: each piece's audio ends one token (token_mel_ratio frames) early,
    // as the last token, emitted before EOS with degraded attention, decodes to ~40 ms of noise.
    // The variant's behaviour, not metadata (ModelHparams sets it).
    bool trim_last_token = false;

    // Longest prompt + generated token sequence accepted: the official pipelines stay below
    // 250 prompt + 1000 generated tokens; the encoder's relative-position scores grow with its square.
    int64_t max_total_tokens = 1500;

    int64_t decoder_in() const { return 4 * mel_bins; }        // [x, mu, speaker, prompt condition]
    int64_t time_sinusoid_dim() const { return decoder_in(); } // SinusoidalPosEmb(in_channels)
    int64_t time_embed_dim() const { return 4 * decoder_channels; }
    int64_t decoder_inner_dim() const { return decoder_heads * decoder_head_dim; }
    int64_t conditioning_channels() const { return 3 * mel_bins; } // mu, speaker, prompt condition
    int upsample_stride() const { return int(token_mel_ratio); }
    int64_t time_points() const { return mean_flow ? 2 : 1; } // times embedded per step: t, or (t, r)
    int64_t cfg_rows() const { return cfg_rate > 0 ? 2 : 1; } // estimator rows: conditional (+ unconditional)

    // The English / multilingual / VC configuration.
    static FlowHParams standard() { return {}; }
    // Turbo's / Nano's (s3gen_meanflow.safetensors, S3Gen(meanflow=True)): 2 mean-flow steps on the
    // linear grid, no CFG, three trailing silence tokens.
    static FlowHParams mean_flow_standard();
    // The standard or (when the checkpoint holds decoder.estimator.time_embed_mixer.weight) the
    // mean-flow configuration with the sizes the flow checkpoint in store under prefix
    // ("s3gen.flow.") declares by its tensor shapes.
    static FlowHParams from_checkpoint(const WeightStore &store, const std::string &prefix);

    static const HparamTable<FlowHParams> &fields();
    // The field rules, then the rules between fields; throws Error naming the keys.
    void validate() const;
};

} // namespace chatterbox::s3gen
