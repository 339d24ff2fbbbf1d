#pragma once
// Attention of one query per sequence over a KV cache (a decode step), as a ggml custom op for the
// CPU backend (nn::AttentionPath::single_query).
//
// ggml's flash attention (0.22) handles a decode step key by key: per cached position and head it
// converts, dots and rescales through one-call-per-position vector helpers, which made it half of a
// batched T3 step (bench/README.md, "T3 continuous batching"). Here each (sequence, head) takes one
// pass over its keys for all scores, one softmax, and one pass over its values, in f32 (f16 K/V
// converted exactly), so the cache is streamed once per step at memory speed.
//
// Batch invariance: a (sequence, head) is computed by one thread in a fixed order over the positions
// its mask lets it see; masked positions are skipped, not added as zeros. A sequence's output is
// therefore the same bits whatever other sequences share the graph, how many positions the graph
// attends (n_kv) beyond its own, and how many threads run it — so a T3 request gives the same
// logits batched as alone.

#include "ggml.h"

namespace chatterbox::kernels {

// q: f32 ggml [D, H, 1, B]; k, v: f32 or f16 ggml [D, H_kv, n_kv, B] (H a multiple of H_kv; rows
// contiguous, other strides free, e.g. views of a cache); mask: f16 or f32 ggml [n_kv, 1, 1, B] or
// [n_kv, 1] (additive: 0 to attend, -inf to skip; a sequence that sees no position gets zeros) or
// nullptr. Returns f32 ggml [D*H, 1, B].
ggml_tensor *single_query_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v,
                                    ggml_tensor *mask, float scale);

} // namespace chatterbox::kernels
