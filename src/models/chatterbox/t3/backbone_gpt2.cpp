#include "models/chatterbox/t3/backbone_gpt2.h"

#include "core/string_match.h"
#include "models/chatterbox/t3/backbone.h"

namespace chatterbox::t3 {

bool is_conv1d_weight(const std::string &name) {
    if (!starts_with(name, "t3.tfmr.h.")) return false;
    for (const char *module : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"})
        if (ends_with(name, module)) return true;
    return false;
}

std::string transposed_conv1d_name(const std::string &name) {
    return name.substr(0, name.rfind('.') + 1) + kTransposedConv1dWeight;
}

nn::Linear conv1d_as_linear(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out) {
    nn::Linear linear;
    const std::string transposed_name = prefix + "." + kTransposedConv1dWeight;
    if (w.has(transposed_name)) {
        linear.weight = w.get(transposed_name, {out, in}, WeightUse::matmul);
    } else {
        linear.weight =
            w.derived(transposed_name, {out, in}, transposed(w.host_f32(prefix + ".weight", {in, out}), in, out));
    }
    linear.bias = w.get(prefix + ".bias", {out}, WeightUse::f32);
    linear.in = in;
    linear.out = out;
    return linear;
}

Gpt2Backbone::Gpt2Backbone(ModuleWeights &w, const HParams &hp) {
    const int64_t h = hp.hidden;
    wpe = w.get("tfmr.wpe.weight", {hp.positions, h}, WeightUse::f32);
    layers.reserve(size_t(hp.n_layers));
    for (int i = 0; i < hp.n_layers; ++i) {
        const std::string p = "tfmr.h." + std::to_string(i) + ".";
        layers.push_back(Gpt2Layer{
            nn::LayerNorm(w, p + "ln_1", h, hp.layer_norm_eps),
            conv1d_as_linear(w, p + "attn.c_attn", h, 3 * h),
            conv1d_as_linear(w, p + "attn.c_proj", h, h),
            nn::LayerNorm(w, p + "ln_2", h, hp.layer_norm_eps),
            nn::FeedForward(conv1d_as_linear(w, p + "mlp.c_fc", h, hp.ffn),
                            conv1d_as_linear(w, p + "mlp.c_proj", hp.ffn, h), nn::Activation::gelu_tanh,
                            w.on_cpu()),
        });
    }
    ln_f = nn::LayerNorm(w, "tfmr.ln_f", h, hp.layer_norm_eps);
    w.ignore("tfmr.wte.");
}

ggml_tensor *Gpt2Backbone::layers_graph(ggml_context *ctx, const HParams &hp, const KvCache &cache,
                                        const BackboneInputs &in, nn::AttentionPath attention) const {
    const int64_t h = hp.hidden, n = in.n_tokens, n_rows = in.embeds->ne[2];
    // inputs_embeds + wpe(position): the positions shared by every row, or one per row (a batch).
    ggml_tensor *position_rows = ggml_get_rows(ctx, wpe, in.positions);
    if (in.per_row) position_rows = ggml_reshape_3d(ctx, position_rows, h, 1, n_rows);
    ggml_tensor *x = ggml_add(ctx, in.embeds, position_rows);
    x = ggml_reshape_2d(ctx, x, h, n * n_rows);
    // Rows [part * hidden, (part + 1) * hidden) of the fused projection, (hidden, n, n_rows). The
    // single-query kernel and the cache writes read rows wherever they lie: views, where a copy of
    // each part had been three nodes (and barriers) of a layer's decode step; the other attention
    // paths take contiguous copies.
    const bool views = attention == nn::AttentionPath::single_query;
    auto part = [&](ggml_tensor *qkv, int index) {
        ggml_tensor *rows =
            ggml_view_3d(ctx, qkv, h, n, n_rows, qkv->nb[1], qkv->nb[1] * size_t(n), size_t(index * h) * sizeof(float));
        return views ? rows : ggml_cont(ctx, rows);
    };
    auto heads = [&](ggml_tensor *rows) { // (head_dim, n_heads, n, n_rows)
        return ggml_view_4d(ctx, rows, hp.head_dim, hp.n_heads, n, n_rows, size_t(hp.head_dim) * sizeof(float),
                            rows->nb[1], rows->nb[2], 0);
    };
    for (int il = 0; il < hp.n_layers; ++il) {
        const Gpt2Layer &w = layers[size_t(il)];
        ggml_tensor *qkv = w.c_attn(ctx, w.ln_1(ctx, x)); // (3 hidden, n * n_rows)
        ggml_tensor *mixed =
            cached_self_attention(ctx, hp, cache, il, in, heads(part(qkv, 0)), part(qkv, 1), part(qkv, 2), attention);
        x = w.attn_proj.added_to(ctx, mixed, x);
        x = w.mlp.added_to(ctx, w.ln_2(ctx, x), x);
    }
    return x;
}

std::vector<const ggml_tensor *> Gpt2Backbone::step_tensors() const {
    std::vector<const ggml_tensor *> tensors{ln_f.weight, ln_f.bias};
    for (const Gpt2Layer &l : layers)
        tensors.insert(tensors.end(), {l.ln_1.weight, l.ln_1.bias, l.c_attn.weight, l.c_attn.bias, l.attn_proj.weight,
                                       l.attn_proj.bias, l.ln_2.weight, l.ln_2.bias, l.mlp.up.weight, l.mlp.up.bias,
                                       l.mlp.down.weight, l.mlp.down.bias});
    return tensors;
}

} // namespace chatterbox::t3
