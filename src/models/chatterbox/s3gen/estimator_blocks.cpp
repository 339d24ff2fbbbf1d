#include "models/chatterbox/s3gen/estimator_blocks.h"

#include "core/error.h"
#include "modules/activations.h"
#include "modules/attention.h"

#include <cmath>

namespace chatterbox::s3gen {

std::vector<float> timestep_sinusoid(float t, int64_t dim, float scale) {
    if (dim < 4 || dim % 2 != 0) fail("timestep_sinusoid: dimension must be even and at least 4, got ", dim);
    const int64_t half = dim / 2;
    // f32 like the reference: exp(arange(half) * -(ln(10000) / (half - 1))), then (scale * t) * f_k
    const float step = float(-(std::log(10000.0) / double(half - 1)));
    const float scaled_t = scale * t;
    std::vector<float> out(static_cast<size_t>(dim));
    for (int64_t k = 0; k < half; ++k) {
        const float frequency = float(std::exp(double(float(k) * step)));
        const double angle = double(scaled_t * frequency);
        out[size_t(k)] = float(std::sin(angle));
        out[size_t(half + k)] = float(std::cos(angle));
    }
    return out;
}

TimeEmbedding::TimeEmbedding(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp)
    : linear_1(w, prefix + ".linear_1", hp.time_sinusoid_dim(), hp.time_embed_dim()),
      linear_2(w, prefix + ".linear_2", hp.time_embed_dim(), hp.time_embed_dim()) {}

ggml_tensor *TimeEmbedding::operator()(ggml_context *ctx, ggml_tensor *sinusoid) const {
    return linear_2(ctx, nn::silu(ctx, linear_1(ctx, sinusoid)));
}

CausalBlock::CausalBlock(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, const FlowHParams &hp)
    : conv(w, prefix + ".block.0", in, out, hp.decoder_conv_kernel, hp.decoder_conv_kernel - 1, 0),
      norm(w, prefix + ".block.2", out, hp.decoder_norm_eps) {}

ggml_tensor *CausalBlock::operator()(ggml_context *ctx, ggml_tensor *x) const {
    return norm.then_mish(ctx, conv(ctx, x));
}

ResnetBlock::ResnetBlock(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, const FlowHParams &hp)
    : block1(w, prefix + ".block1", in, out, hp), block2(w, prefix + ".block2", out, out, hp),
      time_proj(w, prefix + ".mlp.1", hp.time_embed_dim(), out), res_conv(w, prefix + ".res_conv", in, out, 1, 0, 0) {}

ggml_tensor *ResnetBlock::operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *time_features) const {
    ggml_tensor *h =
        ggml_add(ctx, block1(ctx, x), time_proj(ctx, time_features)); // broadcast over frames (and rows when shared)
    return ggml_add(ctx, block2(ctx, h), res_conv(ctx, x));
}

TransformerBlock::TransformerBlock(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp)
    : norm1(w, prefix + ".norm1", hp.decoder_channels, hp.decoder_norm_eps),
      norm3(w, prefix + ".norm3", hp.decoder_channels, hp.decoder_norm_eps),
      to_q(w, prefix + ".attn1.to_q", hp.decoder_channels, hp.decoder_inner_dim(), false),
      to_k(w, prefix + ".attn1.to_k", hp.decoder_channels, hp.decoder_inner_dim(), false),
      to_v(w, prefix + ".attn1.to_v", hp.decoder_channels, hp.decoder_inner_dim(), false),
      to_out(w, prefix + ".attn1.to_out.0", hp.decoder_inner_dim(), hp.decoder_channels),
      feed_forward(
          nn::Linear(w, prefix + ".ff.net.0.proj", hp.decoder_channels, hp.decoder_ffn_mult * hp.decoder_channels),
          nn::Linear(w, prefix + ".ff.net.2", hp.decoder_ffn_mult * hp.decoder_channels, hp.decoder_channels),
          nn::Activation::gelu_erf, w.on_cpu()),
      n_heads(hp.decoder_heads), head_dim(hp.decoder_head_dim), attention_precision(w.product_precision()) {}

ggml_tensor *TransformerBlock::operator()(ggml_context *ctx, ggml_tensor *x, nn::AttentionPath attention,
                                          const AttentionSegments &segments) const {
    const int64_t frames = x->ne[1], rows = x->ne[2];
    ggml_tensor *normed = norm1(ctx, x);
    auto heads = [&](const nn::Linear &projection) {
        return ggml_reshape_4d(ctx, projection(ctx, normed), head_dim, n_heads, frames, rows); // [D, H, T, R]
    };
    ggml_tensor *q = heads(to_q), *k = heads(to_k), *v = heads(to_v);
    nn::AttentionOptions options;
    options.path = attention;
    options.precision = attention_precision;
    ggml_tensor *mixed = nullptr; // ggml [H*D, T, R]
    if (segments.empty()) {
        mixed = nn::attention(ctx, q, k, v, options);
    } else {
        // Each request attends over its own frames, as it would alone; its padding frames get zeros.
        for (const AttentionSegment &segment : segments) {
            const auto part = [&](ggml_tensor *t) {
                return ggml_cont(ctx, ggml_view_4d(ctx, t, head_dim, n_heads, segment.frames, segment.rows, t->nb[1],
                                                   t->nb[2], t->nb[3], size_t(segment.first_row) * t->nb[3]));
            };
            ggml_tensor *own = nn::attention(ctx, part(q), part(k), part(v), options);
            if (segment.frames < frames) own = ggml_pad(ctx, own, 0, int(frames - segment.frames), 0, 0);
            mixed = mixed ? ggml_concat(ctx, mixed, own, 2) : own;
        }
        if (mixed->ne[2] != rows)
            fail("TransformerBlock: the attention segments cover ", mixed->ne[2], " of ", rows, " rows");
    }
    x = ggml_add(ctx, x, to_out(ctx, mixed));
    return ggml_add(ctx, x, feed_forward(ctx, norm3(ctx, x)));
}

ResnetStage::ResnetStage(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, const FlowHParams &hp)
    : resnet(w, prefix + ".0", in, out, hp) {
    for (int j = 0; j < hp.decoder_transformer_blocks; ++j)
        transformers.emplace_back(w, prefix + ".1." + std::to_string(j), hp);
}

ggml_tensor *ResnetStage::operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *time_features,
                                     nn::AttentionPath attention, const AttentionSegments &segments) const {
    x = resnet(ctx, x, time_features);
    for (const TransformerBlock &block : transformers) x = block(ctx, x, attention, segments);
    return x;
}

} // namespace chatterbox::s3gen
