#pragma once
// Attention of one query per sequence over a KV cache (a decode step), or of several, each on its
// own (a prefill), as a ggml custom op for the CPU backend (nn::AttentionPath::single_query).
//
// ggml's flash attention (0.22) handles a decode step key by key: per cached position and head it
// converts, dots and rescales through one-call-per-position vector helpers, which made it half of a
// batched T3 step (bench/history/2026-12-03-t3-batching-intel.md). Here a query's positions are
// taken 64 at a time (a chunk): for all its heads, one pass over the chunk's keys for the scores,
// one softmax relative to the chunk's largest score (SLEEF's vector exp), one pass over its values,
// in f32 (f16 or q8_0 K/V converted exactly, in registers); a second node merges each (query, head)'s
// chunks in position order (their sums and values scaled by exp(chunk's largest - largest)). A
// thread thus streams whole positions (all heads, adjacent in the cache) in order: one sequence's
// decode step is spread over the threads by chunks, where splitting its heads had each thread read
// every other KiB (Turbo's decode step in the pipeline 1.1-1.4x faster on the Zen 5 VM,
// bench/history/2026-12-07-zen5-q4k-one-stream.md). The scores of 8 heads fold side by side, the
// value sums stay in registers over blocks of positions, and the cache is prefetched ahead
// (bench/history/2026-12-04-prefill-parts-decode-attention-zen3.md).
//
// Invariance: a (query, chunk) is computed by one thread in a fixed order over the positions its
// mask lets it see (masked positions are skipped, not added as zeros), and the chunks sit at fixed
// positions and merge in a fixed order. A query's output is therefore the same bits whatever other
// sequences or queries share the graph, how many positions the graph attends (n_kv) beyond its own,
// and how many threads run it — so a T3 request gives the same logits batched as alone, and a
// prefill the same in parts as whole (ggml's flash attention takes 64 or more queries as f32 tiles
// and fewer one by one with an f16 accumulator, which round apart). A query that sees 64 positions
// or fewer gets the bits of one pass over them.

#include "ggml.h"

namespace chatterbox::kernels {

// q: f32 ggml [D, H, n_q, B]; k, v: f32, f16 or q8_0 (D a multiple of 32) ggml [D, H_kv, n_kv, B] (H a
// multiple of H_kv; rows contiguous, other strides free, e.g. views of a cache); mask: f16 or f32 ggml
// [n_kv, n_q, 1, B] or [n_kv, n_q] (additive: 0 to attend, -inf to skip, e.g. causal; a query that
// sees no position gets zeros) or nullptr. Returns f32 ggml [D*H, n_q, B].
ggml_tensor *single_query_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v,
                                    ggml_tensor *mask, float scale);

} // namespace chatterbox::kernels
