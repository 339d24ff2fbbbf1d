#pragma once
// The Llama backbone of the English and multilingual T3 (spec t3.md §1.2): pre-norm decoder layers
// with RMSNorm, NEOX RoPE with llama3 frequency factors, 16-head causal attention over the KV
// cache, SwiGLU FFN; then the final RMSNorm.

#include "models/chatterbox/t3/hparams.h"
#include "modules/attention.h"
#include "modules/feed_forward.h"
#include "modules/linear.h"
#include "modules/module_weights.h"
#include "modules/norm.h"

#include <vector>

namespace chatterbox::t3 {

struct BackboneInputs;
class KvCache;

// One pre-norm decoder layer of the Llama backbone (tfmr.layers.<i>).
struct LayerWeights {
    nn::RMSNorm input_norm;                    // input_layernorm
    nn::Linear q_proj, k_proj, v_proj, o_proj; // self_attn, no biases
    nn::RMSNorm post_attention_norm;           // post_attention_layernorm
    nn::GatedFeedForward mlp;                  // SwiGLU, no biases
};

struct LlamaBackbone {
    std::vector<LayerWeights> layers;
    nn::RMSNorm final_norm;                   // tfmr.norm
    ggml_tensor *rope_freq_factors = nullptr; // (head_dim / 2) llama3 scaling

    // Binds tfmr.layers.* and tfmr.norm (tfmr.embed_tokens is present and unused: inputs are embeddings).
    LlamaBackbone(ModuleWeights &w, const HParams &hp);

    // Writes the new keys/values into cache and runs every layer: the residual stream
    // (hidden, n_tokens * n_rows) before the final norm.
    ggml_tensor *layers_graph(ggml_context *ctx, const HParams &hp, const KvCache &cache, const BackboneInputs &in,
                              nn::AttentionPath attention) const;
    ggml_tensor *normalize(ggml_context *ctx, ggml_tensor *x) const { return final_norm(ctx, x); }
    // The tensors one decode step reads (benchmarks count their bytes).
    std::vector<const ggml_tensor *> step_tensors() const;
};

} // namespace chatterbox::t3
