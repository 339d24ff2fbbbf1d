#include "models/chatterbox/s3gen/flow_hparams.h"

#include "core/error.h"
#include "core/weight_store.h"

namespace chatterbox::s3gen {

const HparamTable<FlowHParams> &FlowHParams::fields() {
    using H = FlowHParams;
    using R = FieldRule;
    static const HparamTable<FlowHParams> table = {
        {"chatterbox.s3gen.token_vocab", &H::vocab, R::positive},
        // The voice's prompt mel comes from the fixed 80-bin S3Gen mel extractor.
        {"chatterbox.s3gen.mel_bins", &H::mel_bins, R::fixed},
        {"chatterbox.s3gen.speaker_dim", &H::speaker_dim, R::positive},
        // The voice builder cuts the prompt tokens to half the prompt mel (embed_ref): two frames per token.
        {"chatterbox.s3gen.token_mel_ratio", &H::token_mel_ratio, R::fixed},
        {"chatterbox.s3gen.encoder_dim", &H::encoder_dim, R::positive},
        {"chatterbox.s3gen.encoder_heads", &H::encoder_heads, R::positive},
        {"chatterbox.s3gen.encoder_ffn", &H::encoder_ffn, R::positive},
        {"chatterbox.s3gen.encoder_blocks", &H::encoder_blocks, R::non_negative},
        {"chatterbox.s3gen.encoder_up_blocks", &H::encoder_up_blocks, R::non_negative},
        {"chatterbox.s3gen.pre_lookahead", &H::pre_lookahead, R::positive},
        {"chatterbox.s3gen.embed_norm_eps", &H::embed_norm_eps, R::positive},
        {"chatterbox.s3gen.conformer_norm_eps", &H::conformer_norm_eps, R::positive},
        {"chatterbox.s3gen.leaky_relu_slope", &H::leaky_relu_slope, R::non_negative},
        {"chatterbox.s3gen.decoder_channels", &H::decoder_channels, R::positive},
        {"chatterbox.s3gen.decoder_heads", &H::decoder_heads, R::positive},
        {"chatterbox.s3gen.decoder_head_dim", &H::decoder_head_dim, R::positive},
        {"chatterbox.s3gen.decoder_transformer_blocks", &H::decoder_transformer_blocks, R::non_negative},
        {"chatterbox.s3gen.decoder_mid_blocks", &H::decoder_mid_blocks, R::non_negative},
        {"chatterbox.s3gen.decoder_ffn_mult", &H::decoder_ffn_mult, R::positive},
        {"chatterbox.s3gen.decoder_conv_kernel", &H::decoder_conv_kernel, R::positive},
        {"chatterbox.s3gen.decoder_norm_eps", &H::decoder_norm_eps, R::positive},
        {"chatterbox.s3gen.cfm_steps", &H::cfm_steps, R::positive},
        {"chatterbox.s3gen.cfm_cosine_grid", &H::cfm_cosine_grid, R::non_negative},
        {"chatterbox.s3gen.cfm_cfg_rate", &H::cfg_rate, R::non_negative},
        {"chatterbox.s3gen.time_scale", &H::time_scale, R::positive},
        {"chatterbox.s3gen.mean_flow", &H::mean_flow, R::non_negative},
        {"chatterbox.s3gen.trailing_silence_tokens", &H::trailing_silence_tokens, R::non_negative},
        {"chatterbox.s3gen.silence_token", &H::silence_token, R::non_negative},
        {"chatterbox.s3gen.max_total_tokens", &H::max_total_tokens, R::positive},
    };
    return table;
}

void FlowHParams::validate() const {
    validate_fields(fields(), *this);
    if (encoder_dim % encoder_heads != 0)
        fail("chatterbox.s3gen.encoder_heads ", encoder_heads, " does not divide chatterbox.s3gen.encoder_dim ",
             encoder_dim);
    if (cfm_cosine_grid > 1) fail("chatterbox.s3gen.cfm_cosine_grid is ", cfm_cosine_grid, "; it must be 0 or 1");
    if (mean_flow > 1) fail("chatterbox.s3gen.mean_flow is ", mean_flow, "; it must be 0 or 1");
    if (silence_token >= vocab)
        fail("chatterbox.s3gen.silence_token ", silence_token, " is outside chatterbox.s3gen.token_vocab ", vocab);
}

FlowHParams FlowHParams::mean_flow_standard() {
    FlowHParams hp;
    hp.cfm_steps = 2;       // s3gen.py flow_inference: 2 if meanflow; tts_turbo passes 2
    hp.cfm_cosine_grid = 0; // flow_matching.py: the cosine schedule only when not meanflow
    hp.cfg_rate = 0.0;      // basic_euler: no CFG batch
    hp.mean_flow = 1;
    hp.trailing_silence_tokens = 3;
    return hp;
}

FlowHParams FlowHParams::from_checkpoint(const WeightStore &store, const std::string &prefix) {
    const bool mean_flow = store.find(prefix + "decoder.estimator.time_embed_mixer.weight") != nullptr;
    FlowHParams hp = mean_flow ? mean_flow_standard() : standard();
    const CheckpointShapes shapes(store, prefix);
    shapes.read("input_embedding.weight", 2, 0, hp.vocab);
    shapes.read("input_embedding.weight", 2, 1, hp.encoder_dim);
    shapes.read("spk_embed_affine_layer.weight", 2, 1, hp.speaker_dim);
    shapes.read("encoder.encoders.0.feed_forward.w_1.weight", 2, 0, hp.encoder_ffn);
    shapes.read("encoder.encoders.0.self_attn.pos_bias_u", 2, 0, hp.encoder_heads);
    shapes.count("encoder.encoders.", ".norm_mha.weight", hp.encoder_blocks);
    shapes.count("encoder.up_encoders.", ".norm_mha.weight", hp.encoder_up_blocks);
    const std::string first_transformer = "decoder.estimator.down_blocks.0.1.0.";
    shapes.read(first_transformer + "norm1.weight", 1, 0, hp.decoder_channels);
    int64_t decoder_inner = hp.decoder_inner_dim();
    shapes.read(first_transformer + "attn1.to_q.weight", 2, 0, decoder_inner);
    hp.decoder_head_dim = decoder_inner / hp.decoder_heads; // the head count is not in any shape
    shapes.count("decoder.estimator.down_blocks.0.1.", ".norm1.weight", hp.decoder_transformer_blocks);
    shapes.count("decoder.estimator.mid_blocks.", ".0.res_conv.weight", hp.decoder_mid_blocks);
    return shapes.validated(hp);
}

} // namespace chatterbox::s3gen
