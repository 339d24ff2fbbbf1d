#pragma once
// Scaled dot-product attention and multi-head attention (PyTorch nn.MultiheadAttention /
// F.scaled_dot_product_attention semantics), with execution paths that agree within f16
// rounding: `plain` (mul_mat + soft_max_ext + mul_mat, the exact reference), `flash`
// (ggml_flash_attn_ext with an f16 mask and f32 accumulation: no n_q x n_kv score tensor) and,
// for unmasked f32 attention, `blocked` (oneDNN products per query block, f32 throughout).
// K/V are used in the type they come in (f32, or f16 or q8_0 from a cache): no path casts them.
//
// Layouts: sequences are ggml [C, T, B] = PyTorch (B, T, C); per-head tensors are
// ggml [D, H, T, B] = PyTorch (B, T, H, D) (a projection output reshaped, before any permute,
// or a strided view of a key/value cache).
//
//   nn::MultiHeadAttention attn(nn::Linear(w, "attn1.to_q", 256, 512, false), nn::Linear(w, "attn1.to_k", 256, 512,
//   false),
//                               nn::Linear(w, "attn1.to_v", 256, 512, false), nn::Linear(w, "attn1.to_out.0", 512,
//                               256),
//                               /*n_heads=*/8);
//   nn::AttentionOptions o;  o.mask = additive_mask;  o.path = nn::AttentionPath::flash;
//   ggml_tensor *y = attn(ctx, x, o);                  // self-attention, x: ggml [256, T, B]
//   ggml_tensor *z = attn(ctx, queries, memory, o);     // cross-attention
//   // models with RoPE / KV caches project themselves and call nn::attention(ctx, q, k, v, o).

#include "kernels/matmul_kernel.h"
#include "modules/linear.h"

#include "ggml.h"

namespace chatterbox::nn {

// How attention is computed; one choice for every model (T3, the flow).
enum class AttentionPath {
    plain, // mul_mat + soft_max + mul_mat: the reference for checking
    flash, // ggml_flash_attn_ext: fast, skips fully masked key blocks
    // Query blocks through oneDNN matrix products (kernels::blocked_attention), f32 or bf16 (see
    // AttentionOptions::precision): 1.3-1.7x flash on AVX2 in f32
    // (bench/history/2026-12-01-flow-kernels-zen3.md). f32 q/k/v, no mask, not causal (the flow
    // estimator's attention); needs a build with oneDNN.
    blocked,
    // Each query on its own over a KV cache (a decode step's one per sequence, or a prefill's):
    // kernels::single_query_attention, a CPU custom op that streams a query's keys and values once,
    // in f32, and gives a query the same result in any batch or prefill part. CPU backend only;
    // f32, f16 or q8_0 K/V, an f16/f32 mask (causality goes in it), not the causal flag.
    single_query,
};

const char *attention_path_name(AttentionPath path); // "plain", "flash", "blocked"

struct AttentionOptions {
    // Additive mask (0 = attend, large negative / -inf = blocked), ggml [n_kv, n_q] (shared by
    // every batch row) or [n_kv, n_q, 1, B] = PyTorch (B, 1, n_q, n_kv). nullptr: no mask.
    // f32, or f16 as the flash path reads it (a mask prepared once per graph, e.g. a KV cache's).
    ggml_tensor *mask = nullptr;
    // Query i (of n_q) sees keys j <= i + (n_kv - n_q): the queries are the last n_q positions.
    // Not combined with an f16 mask (put the causality in the prepared mask instead).
    bool causal = false;
    float scale = 0.0f; // 0: 1 / sqrt(head_dim)
    AttentionPath path = AttentionPath::plain;
    // The coarsest arithmetic the products may use (ModuleWeights::product_precision() of the
    // component): the blocked path multiplies in bf16 at bf16; the other paths compute as they do.
    kernels::ProductPrecision precision = kernels::ProductPrecision::f32;
};

// q: ggml [D, H, n_q, B]; k, v: ggml [D, H_kv, n_kv, B] with H a multiple of H_kv (grouped
// queries share a key/value head). Returns ggml [D*H, n_q, B] (heads concatenated).
// Every query must be able to see at least one key.
ggml_tensor *attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v,
                       const AttentionOptions &options = {});

// An additive mask from a key padding mask: keep is f32 ggml [n_kv, B] = PyTorch (B, n_kv), 1 to
// attend and 0 for padding -> f32 ggml [n_kv, n_q, 1, B] (0 / -1e30).
ggml_tensor *key_padding_mask(ggml_context *ctx, ggml_tensor *keep, int64_t n_q);

struct MultiHeadAttention {
    Linear q, k, v; // separate projections, or
    Linear qkv;     // one fused projection whose output rows are [q | k | v]
    Linear out;
    int n_heads = 0;
    int64_t head_dim = 0;

    MultiHeadAttention() = default;
    MultiHeadAttention(Linear q, Linear k, Linear v, Linear out, int n_heads);
    MultiHeadAttention(Linear qkv, Linear out, int n_heads);

    // Self-attention. x: ggml [C, T, B] -> ggml [C_out, T, B].
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, const AttentionOptions &options = {}) const;
    // Cross-attention (separate projections only). x: ggml [C, T_q, B], memory: ggml [C_kv, T_kv, B].
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *memory,
                            const AttentionOptions &options) const;

  private:
    bool fused() const { return qkv.weight != nullptr; }
    ggml_tensor *heads(ggml_context *ctx, ggml_tensor *projected) const; // [H*D, T, B] -> [D, H, T, B]
};

} // namespace chatterbox::nn
