#include "models/chatterbox/s3gen/flow_encoder.h"

#include "core/error.h"
#include "modules/activations.h"

#include <cmath>

namespace chatterbox::s3gen {

LinearEmbed::LinearEmbed(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp)
    : linear(w, prefix + ".out.0", hp.encoder_dim, hp.encoder_dim),
      norm(w, prefix + ".out.1", hp.encoder_dim, hp.embed_norm_eps), scale(float(std::sqrt(double(hp.encoder_dim)))) {}

ggml_tensor *LinearEmbed::operator()(ggml_context *ctx, ggml_tensor *x) const {
    return ggml_scale(ctx, norm(ctx, linear(ctx, x)), scale);
}

PreLookahead::PreLookahead(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp)
    : conv1(w, prefix + ".conv1", hp.encoder_dim, hp.encoder_dim, hp.pre_lookahead + 1, 0, hp.pre_lookahead),
      conv2(w, prefix + ".conv2", hp.encoder_dim, hp.encoder_dim, 3, 2, 0), slope(hp.leaky_relu_slope) {}

ggml_tensor *PreLookahead::operator()(ggml_context *ctx, ggml_tensor *x) const {
    ggml_tensor *h = nn::leaky_relu(ctx, conv1(ctx, x), slope);
    return ggml_add(ctx, conv2(ctx, h), x);
}

ConformerLayer::ConformerLayer(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp)
    : norm_mha(w, prefix + ".norm_mha", hp.encoder_dim, hp.conformer_norm_eps),
      norm_ff(w, prefix + ".norm_ff", hp.encoder_dim, hp.conformer_norm_eps),
      attention(w, prefix + ".self_attn", hp.encoder_dim, hp.encoder_heads),
      feed_forward(nn::Linear(w, prefix + ".feed_forward.w_1", hp.encoder_dim, hp.encoder_ffn),
                   nn::Linear(w, prefix + ".feed_forward.w_2", hp.encoder_ffn, hp.encoder_dim), nn::Activation::silu) {}

ggml_tensor *ConformerLayer::operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *pos_table,
                                        nn::AttentionPath path) const {
    x = ggml_add(ctx, x, attention(ctx, norm_mha(ctx, x), pos_table, path));
    return ggml_add(ctx, x, feed_forward(ctx, norm_ff(ctx, x)));
}

EncoderUpsample::EncoderUpsample(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp)
    : conv(w, prefix + ".conv", hp.encoder_dim, hp.encoder_dim, 2 * hp.upsample_stride() + 1, 2 * hp.upsample_stride(),
           0),
      stride(hp.upsample_stride()) {}

ggml_tensor *EncoderUpsample::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (x->ne[2] != 1 || x->ne[3] != 1) fail("EncoderUpsample: expected one sequence ggml [C, T]");
    const int64_t channels = x->ne[0], frames = x->ne[1];
    // nearest neighbour: every frame repeated `stride` times in a row
    ggml_tensor *repeated =
        ggml_repeat_4d(ctx, ggml_reshape_3d(ctx, x, channels, 1, frames), channels, stride, frames, 1);
    return conv(ctx, ggml_reshape_2d(ctx, repeated, channels, stride * frames));
}

ConformerEncoder::ConformerEncoder(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp)
    : embed_(w, prefix + ".embed", hp), up_embed_(w, prefix + ".up_embed", hp),
      pre_lookahead_(w, prefix + ".pre_lookahead_layer", hp), upsample_(w, prefix + ".up_layer", hp),
      after_norm_(w, prefix + ".after_norm", hp.encoder_dim, hp.embed_norm_eps) {
    for (int i = 0; i < hp.encoder_blocks; ++i) layers_.emplace_back(w, prefix + ".encoders." + std::to_string(i), hp);
    for (int i = 0; i < hp.encoder_up_blocks; ++i)
        up_layers_.emplace_back(w, prefix + ".up_encoders." + std::to_string(i), hp);
}

ggml_tensor *ConformerEncoder::operator()(ggml_context *ctx, ggml_tensor *tokens, ggml_tensor *token_positions,
                                          ggml_tensor *frame_positions, nn::AttentionPath attention) const {
    ggml_tensor *x = pre_lookahead_(ctx, embed_(ctx, tokens));
    for (const ConformerLayer &layer : layers_) x = layer(ctx, x, token_positions, attention);
    x = up_embed_(ctx, upsample_(ctx, x));
    for (const ConformerLayer &layer : up_layers_) x = layer(ctx, x, frame_positions, attention);
    return after_norm_(ctx, x);
}

} // namespace chatterbox::s3gen
