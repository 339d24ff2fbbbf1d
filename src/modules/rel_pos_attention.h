#pragma once
// Multi-head self-attention with relative positional encoding, ESPnet / WeNet style
// (RelPositionMultiHeadedAttention with EspnetRelPositionalEncoding, Transformer-XL §3.3):
//
//   score(i, j) = [ (q_i + u) · k_j + (q_i + v) · p_(i-j) ] / sqrt(head_dim),   softmax over j
//
// where p_r = linear_pos(PE(r)) and u, v are learned per-head biases (pos_bias_u / pos_bias_v).
// All attention here is bidirectional over the whole sequence (no mask).
//
//   nn::RelPositionAttention attn(w, "encoder.encoders.0.self_attn", 512, 8);
//   ggml_tensor *pos = ...;  // f32 ggml [512, 2T-1] filled with espnet_rel_pos_table(T, 512)
//   ggml_tensor *y = attn(ctx, x, pos); // x: ggml [512, T, B] = PyTorch (B, T, 512)

#include "modules/attention.h"
#include "modules/linear.h"

#include "ggml.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::nn {

// The ESPnet relative positional table for a sequence of `length` frames: 2*length-1 rows of
// `dim` values, row n for relative offset r = length-1-n (so r runs length-1 ... -(length-1));
// PE(r)[2k] = sin(r w_k), PE(r)[2k+1] = cos(r w_k), w_k = exp(-2k ln(10000) / dim), computed in
// f32 as the reference does. Returned row-major = ggml [dim, 2*length-1].
std::vector<float> espnet_rel_pos_table(int64_t length, int64_t dim);

struct RelPositionAttention {
    Linear q, k, v, out;
    Linear pos;                    // linear_pos, no bias
    ggml_tensor *bias_u = nullptr; // pos_bias_u, ggml [head_dim, n_heads] f32
    ggml_tensor *bias_v = nullptr; // pos_bias_v
    int n_heads = 0;
    int64_t head_dim = 0;

    RelPositionAttention() = default;
    // Binds `<prefix>.linear_{q,k,v,out}.weight/.bias`, `<prefix>.linear_pos.weight` and
    // `<prefix>.pos_bias_{u,v}` (n_heads, dim / n_heads).
    RelPositionAttention(ModuleWeights &w, const std::string &prefix, int64_t dim, int n_heads);

    // x: f32 ggml [dim, T, B]; pos_table: f32 ggml [dim, 2T-1] (espnet_rel_pos_table(T, dim)),
    // shared by the batch rows. Returns ggml [dim, T, B]. AttentionPath::blocked computes the
    // scores query block by query block (kernels::blocked_attention with its relative positions), in
    // f32 also where the weights' products round to bf16: in the flow encoder bf16 saved nothing
    // measurable (enc 309 vs 301 ms, Nano on the Zen 5 VM) and took flow_mel from the official's
    // 0.0189 to 0.0201 (bound 0.025). Any other path uses ggml's products, storing the T x T and
    // T x (2T-1) scores of every head (the encoder's 1.2 s of 1.25 s on that VM, 500 tokens).
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *pos_table,
                            AttentionPath path = AttentionPath::plain) const;
};

} // namespace chatterbox::nn
