#include "modules/attention.h"

#include "core/error.h"
#include "kernels/onednn.h"
#include "kernels/single_query_attention.h"
#include "modules/matmul.h"

#include <cmath>

namespace chatterbox::nn {

namespace {

std::string dims(const ggml_tensor *t) {
    return concat("[", t->ne[0], ", ", t->ne[1], ", ", t->ne[2], ", ", t->ne[3], "]");
}

void check_inputs(const ggml_tensor *q, const ggml_tensor *k, const ggml_tensor *v, const AttentionOptions &o) {
    // q8_0 keys and values (a T3 cache in 8 bits) only where the single-query kernel reads them.
    const bool cache_type = k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16 ||
                            (k->type == GGML_TYPE_Q8_0 && o.path == AttentionPath::single_query);
    const bool types_ok = q->type == GGML_TYPE_F32 && k->type == v->type && cache_type;
    if (!types_ok || k->ne[0] != q->ne[0] || v->ne[0] != q->ne[0] || k->ne[1] != v->ne[1] || k->ne[2] != v->ne[2] ||
        q->ne[1] % k->ne[1] != 0 || k->ne[3] != q->ne[3] || v->ne[3] != q->ne[3])
        fail("attention: expected q f32 ggml [D, H, n_q, B] and k, v (f32 or f16; q8_0 on the single_query path) "
             "ggml [D, H_kv, n_kv, B] with H a multiple of H_kv; got q ",
             ggml_type_name(q->type), " ", dims(q), ", k ", ggml_type_name(k->type), " ", dims(k), ", v ",
             ggml_type_name(v->type), " ", dims(v));
    if (o.mask) {
        const ggml_tensor *m = o.mask;
        if ((m->type != GGML_TYPE_F32 && m->type != GGML_TYPE_F16) || m->ne[0] != k->ne[2] || m->ne[1] != q->ne[2] ||
            m->ne[2] != 1 || (m->ne[3] != 1 && m->ne[3] != q->ne[3]))
            fail("attention: mask must be f32 or f16 ggml [n_kv = ", k->ne[2], ", n_q = ", q->ne[2], "] or [", k->ne[2],
                 ", ", q->ne[2], ", 1, ", q->ne[3], "], got ", ggml_type_name(m->type), " ", dims(m));
        if (o.causal && m->type == GGML_TYPE_F16) fail("attention: causal with an f16 mask");
    }
    if (o.causal && k->ne[2] < q->ne[2])
        fail("attention: causal with fewer keys (", k->ne[2], ") than queries (", q->ne[2], ")");
}

ggml_tensor *plain_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v, ggml_tensor *mask,
                             bool causal, float scale) {
    const int64_t head_dim = q->ne[0], n_heads = q->ne[1], n_q = q->ne[2], batch = q->ne[3];
    ggml_tensor *qp = ggml_permute(ctx, q, 0, 2, 1, 3); // [D, n_q, H, B]
    ggml_tensor *kp = ggml_permute(ctx, k, 0, 2, 1, 3); // [D, n_kv, H_kv, B]
    ggml_tensor *scores = nn::product(ctx, kp, qp);     // [n_kv, n_q, H, B]
    if (causal) scores = ggml_diag_mask_inf(ctx, scores, int(k->ne[2] - n_q));
    ggml_tensor *probs = ggml_soft_max_ext(ctx, scores, mask, scale, 0.0f);
    ggml_tensor *vt = ggml_cont(ctx, ggml_permute(ctx, v, 1, 2, 0, 3)); // [n_kv, D, H_kv, B]
    ggml_tensor *heads = nn::product(ctx, vt, probs);                   // [D, n_q, H, B]
    heads = ggml_cont(ctx, ggml_permute(ctx, heads, 0, 2, 1, 3));       // [D, H, n_q, B]
    return ggml_reshape_3d(ctx, heads, head_dim * n_heads, n_q, batch);
}

ggml_tensor *flash_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v, ggml_tensor *mask,
                             bool causal, float scale) {
    const int64_t head_dim = q->ne[0], n_heads = q->ne[1], n_q = q->ne[2], batch = q->ne[3], n_kv = k->ne[2];
    if (causal) {
        ggml_tensor *zeros = ggml_fill(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n_kv, n_q), 0.0f);
        ggml_tensor *causal_mask = ggml_diag_mask_inf(ctx, zeros, int(n_kv - n_q));
        mask = mask ? ggml_add(ctx, mask, causal_mask) : causal_mask;
    }
    if (mask && mask->type != GGML_TYPE_F16) mask = ggml_cast(ctx, mask, GGML_TYPE_F16);
    ggml_tensor *qp = ggml_permute(ctx, q, 0, 2, 1, 3); // [D, n_q, H, B]
    ggml_tensor *kp = ggml_permute(ctx, k, 0, 2, 1, 3); // [D, n_kv, H_kv, B]
    ggml_tensor *vp = ggml_permute(ctx, v, 0, 2, 1, 3);
    ggml_tensor *out = ggml_flash_attn_ext(ctx, qp, kp, vp, mask, scale, 0.0f, 0.0f); // [D, H, n_q, B]
    ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
    return ggml_reshape_3d(ctx, out, head_dim * n_heads, n_q, batch);
}

} // namespace

const char *attention_path_name(AttentionPath path) {
    switch (path) {
    case AttentionPath::plain:
        return "plain";
    case AttentionPath::flash:
        return "flash";
    case AttentionPath::blocked:
        return "blocked";
    case AttentionPath::single_query:
        return "single_query";
    }
    return "?";
}

ggml_tensor *attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v,
                       const AttentionOptions &options) {
    check_inputs(q, k, v, options);
    const float scale = options.scale != 0.0f ? options.scale : float(1.0 / std::sqrt(double(q->ne[0])));
    if (options.path == AttentionPath::flash) return flash_attention(ctx, q, k, v, options.mask, options.causal, scale);
    if (options.path == AttentionPath::blocked) {
        if (options.mask || options.causal || k->type != GGML_TYPE_F32)
            fail("attention: the blocked path takes f32 keys and values without a mask and not causal (use flash)");
        return kernels::blocked_attention(ctx, q, k, v, scale, options.precision);
    }
    if (options.path == AttentionPath::single_query) {
        if (options.causal) fail("attention: the single_query path takes its causality from the mask");
        return kernels::single_query_attention(ctx, q, k, v, options.mask, scale);
    }
    return plain_attention(ctx, q, k, v, options.mask, options.causal, scale);
}

ggml_tensor *key_padding_mask(ggml_context *ctx, ggml_tensor *keep, int64_t n_q) {
    if (keep->type != GGML_TYPE_F32 || keep->ne[2] != 1 || keep->ne[3] != 1)
        fail("key_padding_mask: keep must be f32 ggml [n_kv, B], got ", ggml_type_name(keep->type), " ", dims(keep));
    const int64_t n_kv = keep->ne[0], batch = keep->ne[1];
    // keep 1 -> 0, keep 0 -> -1e30 (becomes -inf in the f16 mask of the flash path)
    ggml_tensor *additive = ggml_scale_bias(ctx, keep, 1e30f, -1e30f);
    return ggml_repeat_4d(ctx, ggml_reshape_4d(ctx, additive, n_kv, 1, 1, batch), n_kv, n_q, 1, batch);
}

MultiHeadAttention::MultiHeadAttention(Linear q_, Linear k_, Linear v_, Linear out_, int n_heads_)
    : q(q_), k(k_), v(v_), out(out_), n_heads(n_heads_) {
    if (n_heads <= 0 || q.out % n_heads != 0 || k.out != q.out || v.out != q.out || k.in != v.in || out.in != q.out)
        fail("MultiHeadAttention: projections ", q.in, "->", q.out, " (q), ", k.in, "->", k.out, " (k), ", v.in, "->",
             v.out, " (v), ", out.in, "->", out.out, " (out) do not fit ", n_heads, " heads");
    head_dim = q.out / n_heads;
}

MultiHeadAttention::MultiHeadAttention(Linear qkv_, Linear out_, int n_heads_)
    : qkv(qkv_), out(out_), n_heads(n_heads_) {
    if (n_heads <= 0 || qkv.out % (3 * int64_t(n_heads)) != 0 || out.in * 3 != qkv.out)
        fail("MultiHeadAttention: fused projection ", qkv.in, "->", qkv.out, " and output ", out.in, "->", out.out,
             " do not fit ", n_heads, " heads");
    head_dim = qkv.out / 3 / n_heads;
}

ggml_tensor *MultiHeadAttention::heads(ggml_context *ctx, ggml_tensor *projected) const {
    return ggml_reshape_4d(ctx, projected, head_dim, n_heads, projected->ne[1], projected->ne[2]);
}

ggml_tensor *MultiHeadAttention::operator()(ggml_context *ctx, ggml_tensor *x, const AttentionOptions &options) const {
    if (n_heads == 0) fail("MultiHeadAttention used before it was bound");
    if (!fused()) return (*this)(ctx, x, x, options);
    ggml_tensor *projected = qkv(ctx, x); // [3 * H * D, T, B]
    const int64_t inner = head_dim * n_heads, frames = projected->ne[1], batch = projected->ne[2];
    const size_t element = ggml_element_size(projected);
    auto part = [&](int index) {
        return ggml_view_4d(ctx, projected, head_dim, n_heads, frames, batch, head_dim * element, projected->nb[1],
                            projected->nb[2], size_t(index) * size_t(inner) * element);
    };
    return out(ctx, attention(ctx, part(0), part(1), part(2), options));
}

ggml_tensor *MultiHeadAttention::operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *memory,
                                            const AttentionOptions &options) const {
    if (n_heads == 0) fail("MultiHeadAttention used before it was bound");
    if (fused()) fail("MultiHeadAttention: cross-attention needs separate q/k/v projections");
    return out(ctx,
               attention(ctx, heads(ctx, q(ctx, x)), heads(ctx, k(ctx, memory)), heads(ctx, v(ctx, memory)), options));
}

} // namespace chatterbox::nn
