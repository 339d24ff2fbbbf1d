#pragma once
// Graph builders for the T3 backbone, whichever it is (T3Model::backbone(): Llama, backbone_llama.h;
// GPT-2, backbone_gpt2.h). The same builder serves prefill (many tokens) and decode (one token);
// the CFG rows are the batch dimension of every tensor. Both backbones attend through the same KV
// cache with cached_self_attention().

#include "core/graph.h"
#include "models/chatterbox/t3/kv_cache.h"
#include "models/chatterbox/t3/model.h"
#include "modules/attention.h"

#include <vector>

namespace chatterbox::t3 {

// Heads whose attention probabilities a graph also computes (the alignment analyzer,
// speech_guards.h), on batch row 0 (the conditional row) only, beside the fast attention of every
// head; the graph builder sets mean to the heads' mean probabilities, ggml (n_kv, n_tokens).
struct AttentionWatch {
    std::vector<AttentionHead> heads;
    ggml_tensor *mean = nullptr;
};

// The persistent inputs of one backbone graph.
struct BackboneInputs {
    int n_tokens = 0;                   // new tokens per row
    int n_kv = 0;                       // cache positions attended to: [0, n_kv)
    ggml_tensor *embeds = nullptr;      // f32, PyTorch (n_rows, n_tokens, hidden): input embeddings
    ggml_tensor *positions = nullptr;   // i32 (n_tokens): sequence positions of the new tokens (RoPE / wpe)
    ggml_tensor *cache_slots = nullptr; // i64 (n_tokens): cache positions the new keys/values go to
    ggml_tensor *mask = nullptr;        // f16 (n_tokens, n_kv): 0 where a token may attend, -inf elsewhere
    AttentionWatch *watch = nullptr;    // heads to watch, or none
    // A batch of independent sequences, one token each (n_tokens 1): positions i32 (n_rows),
    // cache_slots i64 (n_rows, 1) and mask f16 (n_rows, 1, 1, n_kv) are per row.
    bool per_row = false;
};

// The graph's rows are the first n_rows rows of the cache (all of them, or fewer: a batch's rows in use).
BackboneInputs make_backbone_inputs(GraphRunner &graph, const HParams &hp, int n_rows, int n_tokens, int n_kv);
// Per-row inputs of one decode step over n_rows independent sequences (BackboneInputs::per_row).
BackboneInputs make_batch_decode_inputs(GraphRunner &graph, const HParams &hp, int n_rows, int n_kv);

// Writes the new keys/values into cache and runs every layer. Returns the residual stream
// (hidden, n_tokens, n_rows) in ggml order, before the final norm.
ggml_tensor *build_decoder_layers(ggml_context *ctx, const T3Model &model, const KvCache &cache,
                                  const BackboneInputs &in, nn::AttentionPath attention);

// Final norm and speech head: hidden (hidden, n, n_rows) -> logits (speech_vocab, n, n_rows).
ggml_tensor *build_speech_logits(ggml_context *ctx, const T3Model &model, ggml_tensor *hidden);

// Causal self-attention of one layer through the cache: writes k and v ((hidden, n_tokens * n_rows)
// contiguous, or (hidden, n_tokens, n_rows) with contiguous rows anywhere) into the layer's cache
// slots in.cache_slots and lets q (head_dim, n_heads, n_tokens, n_rows; rows contiguous, other strides
// free on the single-query path) attend to cache positions [0, in.n_kv) under in.mask. Returns
// (hidden, n_tokens * n_rows).
ggml_tensor *cached_self_attention(ggml_context *ctx, const HParams &hp, const KvCache &cache, int layer,
                                   const BackboneInputs &in, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v,
                                   nn::AttentionPath attention);

// Checks in against cache (capacity, rows) before a backbone builds on it.
// The rows of a sequence's tokens laid (head_dim, n_heads, n, n_rows), as the positions run: per
// sequence (n), or one per row (per_row, n = 1: the rows are then the tokens).
ggml_tensor *heads_for_positions(ggml_context *ctx, const BackboneInputs &in, ggml_tensor *heads);
void check_backbone_inputs(const KvCache &cache, const BackboneInputs &in);

// Mask values for n_tokens queries at positions first_query, first_query + 1, ... over n_kv cache
// positions: the query at position p may attend to cache positions [0, p].
std::vector<ggml_fp16_t> causal_mask(int n_tokens, int n_kv, int first_query);

} // namespace chatterbox::t3
