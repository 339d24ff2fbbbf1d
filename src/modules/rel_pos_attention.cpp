#include "modules/rel_pos_attention.h"

#include "core/error.h"
#include "kernels/onednn.h"
#include "modules/matmul.h"

#include <cmath>

namespace chatterbox::nn {

std::vector<float> espnet_rel_pos_table(int64_t length, int64_t dim) {
    if (length <= 0 || dim <= 0 || dim % 2 != 0)
        fail("espnet_rel_pos_table: need a positive length and an even dimension, got length ", length, ", dim ", dim);
    // The reference builds everything in f32: div_term = exp(arange(0, dim, 2) * -(ln(10000) / dim)),
    // then sin/cos(position * div_term); negative offsets are sin(-a) = -sin(a), cos(-a) = cos(a).
    const float exponent_step = float(-(std::log(10000.0) / double(dim)));
    std::vector<float> frequency(size_t(dim / 2));
    for (int64_t k = 0; k < dim / 2; ++k) frequency[size_t(k)] = float(std::exp(double(float(2 * k) * exponent_step)));

    const int64_t rows = 2 * length - 1;
    std::vector<float> table(size_t(rows * dim));
    for (int64_t n = 0; n < rows; ++n) {
        const int64_t offset = length - 1 - n;
        const float distance = float(offset < 0 ? -offset : offset);
        const float sign = offset < 0 ? -1.0f : 1.0f;
        float *row = table.data() + size_t(n * dim);
        for (int64_t k = 0; k < dim / 2; ++k) {
            const double angle = double(distance * frequency[size_t(k)]);
            row[2 * k] = sign * float(std::sin(angle));
            row[2 * k + 1] = float(std::cos(angle));
        }
    }
    return table;
}

RelPositionAttention::RelPositionAttention(ModuleWeights &w, const std::string &prefix, int64_t dim, int n_heads_)
    : n_heads(n_heads_) {
    if (n_heads <= 0 || dim <= 0 || dim % n_heads != 0)
        fail("RelPositionAttention ", prefix, ": ", dim, " features do not split into ", n_heads, " heads");
    head_dim = dim / n_heads;
    q = Linear(w, prefix + ".linear_q", dim, dim);
    k = Linear(w, prefix + ".linear_k", dim, dim);
    v = Linear(w, prefix + ".linear_v", dim, dim);
    out = Linear(w, prefix + ".linear_out", dim, dim);
    pos = Linear(w, prefix + ".linear_pos", dim, dim, /*bias=*/false);
    bias_u = w.get(prefix + ".pos_bias_u", {n_heads, head_dim}, WeightUse::f32);
    bias_v = w.get(prefix + ".pos_bias_v", {n_heads, head_dim}, WeightUse::f32);
}

ggml_tensor *RelPositionAttention::operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *pos_table,
                                              AttentionPath path) const {
    if (n_heads == 0) fail("RelPositionAttention used before it was bound");
    const int64_t dim = head_dim * n_heads, frames = x->ne[1], batch = x->ne[2];
    if (x->ne[0] != dim || x->ne[3] != 1)
        fail("RelPositionAttention ", ggml_get_name(q.weight), ": input must be ggml [", dim, ", T, B], got [",
             x->ne[0], ", ", x->ne[1], ", ", x->ne[2], ", ", x->ne[3], "]");
    if (pos_table->ne[0] != dim || pos_table->ne[1] != 2 * frames - 1 || pos_table->ne[2] != 1 || pos_table->ne[3] != 1)
        fail("RelPositionAttention ", ggml_get_name(q.weight), ": positional table must be ggml [", dim, ", ",
             2 * frames - 1, "] for ", frames, " frames, got [", pos_table->ne[0], ", ", pos_table->ne[1], ", ",
             pos_table->ne[2], ", ", pos_table->ne[3], "]");

    auto heads = [&](ggml_tensor *t) { return ggml_reshape_4d(ctx, t, head_dim, n_heads, t->ne[1], t->ne[2]); };
    // ggml [D, H, T, B] -> [D, T, H, B]: per head, one row per frame
    auto by_head = [&](ggml_tensor *t) { return ggml_permute(ctx, t, 0, 2, 1, 3); };
    ggml_tensor *query = heads(q(ctx, x));
    ggml_tensor *key = heads(k(ctx, x));
    ggml_tensor *value = heads(v(ctx, x));
    ggml_tensor *position = heads(pos(ctx, pos_table)); // [D, H, 2T-1, 1]

    const float scale = float(1.0 / std::sqrt(double(head_dim)));
    if (path == AttentionPath::blocked)
        return out(ctx, kernels::blocked_attention(ctx, ggml_add(ctx, query, bias_u), key, value, scale,
                                                   kernels::ProductPrecision::f32,
                                                   {ggml_add(ctx, query, bias_v), position}));

    // Right-hand operands of mul_mat are made contiguous: that keeps the product on the GEMM path.
    ggml_tensor *query_u = ggml_cont(ctx, by_head(ggml_add(ctx, query, bias_u)));
    ggml_tensor *query_v = ggml_cont(ctx, by_head(ggml_add(ctx, query, bias_v)));
    ggml_tensor *content = nn::product(ctx, by_head(key), query_u);       // [T_k, T_q, H, B]
    ggml_tensor *relative = nn::product(ctx, by_head(position), query_v); // [2T-1, T_q, H, B]
    // rel_shift: query i, key j reads the table row of offset i - j, i.e. row T-1-i+j: a view whose
    // row stride is one element shorter than the table's.
    ggml_tensor *shifted =
        ggml_view_4d(ctx, relative, frames, frames, n_heads, batch, relative->nb[1] - relative->nb[0], relative->nb[2],
                     relative->nb[3], size_t(frames - 1) * relative->nb[0]);
    // In place: the score tensors are T x T per head and row, the largest of the graph.
    ggml_tensor *scores = ggml_add_inplace(ctx, content, shifted);
    ggml_tensor *probs = ggml_soft_max_ext_inplace(ctx, scores, nullptr, scale, 0.0f);

    ggml_tensor *value_t = ggml_cont(ctx, ggml_permute(ctx, value, 1, 2, 0, 3)); // [T_k, D, H, B]
    ggml_tensor *mixed = nn::product(ctx, value_t, probs);                       // [D, T_q, H, B]
    mixed = ggml_cont(ctx, ggml_permute(ctx, mixed, 0, 2, 1, 3));                // [D, H, T_q, B]
    return out(ctx, ggml_reshape_3d(ctx, mixed, dim, frames, batch));
}

} // namespace chatterbox::nn
