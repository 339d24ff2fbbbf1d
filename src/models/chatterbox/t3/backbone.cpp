#include "models/chatterbox/t3/backbone.h"

#include "core/error.h"
#include "modules/matmul.h"

#include <algorithm>
#include <cmath>

namespace chatterbox::t3 {

namespace {

// The first n_kv positions of a cache tensor as (head_dim, n_heads, n_kv, n_rows): a strided view
// in nn::attention's key/value layout.
ggml_tensor *cache_heads(ggml_context *ctx, const HParams &hp, ggml_tensor *cache, int n_kv) {
    return ggml_view_4d(ctx, cache, hp.head_dim, hp.n_heads, n_kv, cache->ne[2],
                        ggml_row_size(cache->type, hp.head_dim), cache->nb[1], cache->nb[2], 0);
}

// Adds the watched heads of this layer to watch.mean: softmax(scale * k_h . q_h + mask) of row 0,
// (n_kv, n_tokens), as eager attention computes the probabilities; divided by the head count when
// the last watched layer adds its heads.
void add_watched_heads(ggml_context *ctx, const HParams &hp, int layer, const BackboneInputs &in, ggml_tensor *q,
                       ggml_tensor *k_cache, AttentionWatch &watch) {
    const float scale = 1.0f / std::sqrt(float(hp.head_dim));
    int last_layer = -1;
    for (const AttentionHead &h : watch.heads) last_layer = std::max(last_layer, h.layer);
    for (const AttentionHead &h : watch.heads) {
        if (h.layer != layer) continue;
        ggml_tensor *q_h =
            ggml_cont(ctx, ggml_view_2d(ctx, q, hp.head_dim, in.n_tokens, q->nb[2], size_t(h.head) * q->nb[1]));
        ggml_tensor *k_view = ggml_view_2d(ctx, k_cache, hp.head_dim, in.n_kv, k_cache->nb[1],
                                           size_t(h.head) * ggml_row_size(k_cache->type, hp.head_dim));
        // q8_0 keys dequantised (exactly) for the product; f16 and f32 as they are.
        ggml_tensor *k_h =
            ggml_is_quantized(k_cache->type) ? ggml_cast(ctx, k_view, GGML_TYPE_F32) : ggml_cont(ctx, k_view);
        ggml_tensor *probs = ggml_soft_max_ext(ctx, nn::product(ctx, k_h, q_h), in.mask, scale, 0.0f);
        watch.mean = watch.mean ? ggml_add(ctx, watch.mean, probs) : probs;
    }
    if (layer == last_layer && watch.mean) watch.mean = ggml_scale(ctx, watch.mean, 1.0f / float(watch.heads.size()));
}

} // namespace

BackboneInputs make_backbone_inputs(GraphRunner &graph, const HParams &hp, int n_rows, int n_tokens, int n_kv) {
    if (n_tokens > n_kv) fail("T3 backbone: ", n_tokens, " new tokens do not fit ", n_kv, " cache positions");
    BackboneInputs in;
    in.n_tokens = n_tokens;
    in.n_kv = n_kv;
    in.embeds = graph.input("t3.embeds", GGML_TYPE_F32, {n_rows, n_tokens, hp.hidden});
    in.positions = graph.input("t3.positions", GGML_TYPE_I32, {n_tokens});
    in.cache_slots = graph.input("t3.cache_slots", GGML_TYPE_I64, {n_tokens});
    in.mask = graph.input("t3.mask", GGML_TYPE_F16, {n_tokens, n_kv});
    return in;
}

BackboneInputs make_batch_decode_inputs(GraphRunner &graph, const HParams &hp, int n_rows, int n_kv) {
    BackboneInputs in;
    in.n_tokens = 1;
    in.n_kv = n_kv;
    in.per_row = true;
    in.embeds = graph.input("t3.embeds", GGML_TYPE_F32, {n_rows, 1, hp.hidden});
    in.positions = graph.input("t3.positions", GGML_TYPE_I32, {n_rows});
    in.cache_slots = graph.input("t3.cache_slots", GGML_TYPE_I64, {n_rows, 1});
    in.mask = graph.input("t3.mask", GGML_TYPE_F16, {n_rows, 1, 1, n_kv});
    return in;
}

void check_backbone_inputs(const KvCache &cache, const BackboneInputs &in) {
    if (in.n_kv > cache.capacity())
        fail("T3 backbone: attention over ", in.n_kv, " positions exceeds the cache capacity ", cache.capacity());
    if (in.embeds->ne[2] > cache.n_rows())
        fail("T3 backbone: ", in.embeds->ne[2], " rows but the cache holds ", cache.n_rows());
    if (in.per_row && (in.n_tokens != 1 || in.watch))
        fail("T3 backbone: a batch of sequences takes one token per row and watches no heads");
}

ggml_tensor *heads_for_positions(ggml_context *ctx, const BackboneInputs &in, ggml_tensor *heads) {
    return in.per_row ? ggml_reshape_4d(ctx, heads, heads->ne[0], heads->ne[1], heads->ne[3], 1) : heads;
}

ggml_tensor *cached_self_attention(ggml_context *ctx, const HParams &hp, const KvCache &cache, int layer,
                                   const BackboneInputs &in, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v,
                                   nn::AttentionPath attention_path) {
    const int64_t n = in.n_tokens, n_rows = in.embeds->ne[2];
    // The graph's rows of the cache: all of them, or the first n_rows of a batch.
    const auto rows = [&](ggml_tensor *t) {
        return n_rows == t->ne[2] ? t : ggml_view_3d(ctx, t, t->ne[0], t->ne[1], n_rows, t->nb[1], t->nb[2], 0);
    };
    nn::AttentionOptions attention;
    attention.mask = in.mask; // causal over the cache, prepared on the host
    attention.path = attention_path;
    // The written caches (views of the cache tensors) carry the dependency to the attention reads.
    // k, v as (hidden, n, n_rows): a view of that shape as it is, a contiguous tensor reshaped.
    const auto token_rows = [&](ggml_tensor *t) {
        return t->ne[0] == hp.hidden && t->ne[1] == n && t->ne[2] == n_rows && t->ne[3] == 1
                   ? t
                   : ggml_reshape_3d(ctx, t, hp.hidden, n, n_rows);
    };
    ggml_tensor *k_cache = ggml_set_rows(ctx, rows(cache.k(layer)), token_rows(k), in.cache_slots);
    ggml_tensor *v_cache = ggml_set_rows(ctx, rows(cache.v(layer)), token_rows(v), in.cache_slots);
    if (in.watch) add_watched_heads(ctx, hp, layer, in, q, k_cache, *in.watch);
    ggml_tensor *mixed = nn::attention(ctx, q, cache_heads(ctx, hp, k_cache, in.n_kv),
                                       cache_heads(ctx, hp, v_cache, in.n_kv), attention); // (hidden, n, n_rows)
    return ggml_reshape_2d(ctx, mixed, hp.hidden, n * n_rows);
}

ggml_tensor *build_decoder_layers(ggml_context *ctx, const T3Model &model, const KvCache &cache,
                                  const BackboneInputs &in, nn::AttentionPath attention) {
    check_backbone_inputs(cache, in);
    ggml_tensor *x = std::visit(
        [&](const auto &backbone) { return backbone.layers_graph(ctx, model.hparams(), cache, in, attention); },
        model.backbone());
    return ggml_reshape_3d(ctx, x, model.hparams().hidden, in.n_tokens, in.embeds->ne[2]);
}

ggml_tensor *build_speech_logits(ggml_context *ctx, const T3Model &model, ggml_tensor *hidden) {
    const int64_t n = hidden->ne[1], n_rows = hidden->ne[2];
    ggml_tensor *flat = ggml_reshape_2d(ctx, hidden, hidden->ne[0], n * n_rows); // one pass over the head
    ggml_tensor *normed =
        std::visit([&](const auto &backbone) { return backbone.normalize(ctx, flat); }, model.backbone());
    ggml_tensor *logits = model.speech_head()(ctx, normed);
    return ggml_reshape_3d(ctx, logits, model.hparams().speech_vocab, n, n_rows);
}

std::vector<ggml_fp16_t> causal_mask(int n_tokens, int n_kv, int first_query) {
    const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), blocked = ggml_fp32_to_fp16(-INFINITY);
    std::vector<ggml_fp16_t> mask(size_t(n_tokens) * size_t(n_kv));
    for (int t = 0; t < n_tokens; ++t)
        for (int j = 0; j < n_kv; ++j)
            mask[size_t(t) * size_t(n_kv) + size_t(j)] = j <= first_query + t ? zero : blocked;
    return mask;
}

} // namespace chatterbox::t3
