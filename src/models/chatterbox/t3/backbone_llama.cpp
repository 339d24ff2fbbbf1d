#include "models/chatterbox/t3/backbone_llama.h"

#include "models/chatterbox/t3/backbone.h"

namespace chatterbox::t3 {

namespace {

// (hidden, n * n_rows) -> (head_dim, n_heads, n, n_rows), rotated: HF rotate-half pairs (d, d + 32)
// are ggml's NEOX mode; the llama3 scaling enters through the frequency factors.
ggml_tensor *rope(ggml_context *ctx, const HParams &hp, ggml_tensor *freq_factors, ggml_tensor *x,
                  const BackboneInputs &in, int64_t n_rows) {
    ggml_tensor *heads = ggml_reshape_4d(ctx, x, hp.head_dim, hp.n_heads, x->ne[1] / n_rows, n_rows);
    ggml_tensor *rotated = ggml_rope_ext(ctx, heads_for_positions(ctx, in, heads), in.positions, freq_factors,
                                         hp.head_dim, GGML_ROPE_TYPE_NEOX, hp.rope_original_max_positions,
                                         hp.rope_theta, /*freq_scale=*/1.0f, /*ext_factor=*/0.0f,
                                         /*attn_factor=*/1.0f, /*beta_fast=*/32.0f, /*beta_slow=*/1.0f);
    return in.per_row ? ggml_reshape_4d(ctx, rotated, heads->ne[0], heads->ne[1], heads->ne[2], heads->ne[3]) : rotated;
}

} // namespace

LlamaBackbone::LlamaBackbone(ModuleWeights &w, const HParams &hp) {
    const int64_t h = hp.hidden;
    auto projection = [&](const std::string &name, int64_t in, int64_t out) {
        return nn::Linear(w, name, in, out, /*bias=*/false);
    };
    layers.reserve(size_t(hp.n_layers));
    for (int i = 0; i < hp.n_layers; ++i) {
        const std::string p = "tfmr.layers." + std::to_string(i) + ".";
        layers.push_back(LayerWeights{
            nn::RMSNorm(w, p + "input_layernorm", h, hp.rms_eps),
            projection(p + "self_attn.q_proj", h, h),
            projection(p + "self_attn.k_proj", h, h),
            projection(p + "self_attn.v_proj", h, h),
            projection(p + "self_attn.o_proj", h, h),
            nn::RMSNorm(w, p + "post_attention_layernorm", h, hp.rms_eps),
            nn::GatedFeedForward(projection(p + "mlp.gate_proj", h, hp.ffn), projection(p + "mlp.up_proj", h, hp.ffn),
                                 projection(p + "mlp.down_proj", hp.ffn, h)),
        });
    }
    final_norm = nn::RMSNorm(w, "tfmr.norm", h, hp.rms_eps);
    rope_freq_factors = w.derived("rope_freq_factors", {hp.head_dim / 2}, llama3_rope_freq_factors(hp));
    w.ignore("tfmr.embed_tokens.");
}

ggml_tensor *LlamaBackbone::layers_graph(ggml_context *ctx, const HParams &hp, const KvCache &cache,
                                         const BackboneInputs &in, nn::AttentionPath attention) const {
    const int64_t n = in.n_tokens, n_rows = in.embeds->ne[2];
    // Tokens of every row side by side: each weight matrix is streamed once per step for all rows
    // (a 3-D operand would make ggml run one matrix-vector product per row).
    ggml_tensor *x = ggml_reshape_2d(ctx, in.embeds, hp.hidden, n * n_rows);
    for (int il = 0; il < hp.n_layers; ++il) {
        const LayerWeights &w = layers[size_t(il)];
        ggml_tensor *h = w.input_norm(ctx, x);
        ggml_tensor *q = rope(ctx, hp, rope_freq_factors, w.q_proj(ctx, h), in, n_rows);
        ggml_tensor *k = rope(ctx, hp, rope_freq_factors, w.k_proj(ctx, h), in, n_rows);
        ggml_tensor *mixed = cached_self_attention(ctx, hp, cache, il, in, q, k, w.v_proj(ctx, h), attention);
        x = w.o_proj.added_to(ctx, mixed, x);
        x = w.mlp.added_to(ctx, w.post_attention_norm(ctx, x), x);
    }
    return x;
}

std::vector<const ggml_tensor *> LlamaBackbone::step_tensors() const {
    std::vector<const ggml_tensor *> tensors{final_norm.weight};
    for (const LayerWeights &l : layers)
        tensors.insert(tensors.end(),
                       {l.input_norm.weight, l.q_proj.weight, l.k_proj.weight, l.v_proj.weight, l.o_proj.weight,
                        l.post_attention_norm.weight, l.mlp.gate.weight, l.mlp.up.weight, l.mlp.down.weight});
    return tensors;
}

} // namespace chatterbox::t3
