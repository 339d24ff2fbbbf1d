#pragma once
// The GPT-2 backbone of the Turbo (GPT-2 medium) and Nano (GPT-2 small) T3 (spec variants.md §1,
// transformers GPT2Model): learned absolute positions tfmr.wpe added to the input embeddings,
// pre-norm blocks of LayerNorm -> fused c_attn (q | k | v, with bias) -> causal attention over the
// KV cache -> c_proj, LayerNorm -> c_fc -> GELU (tanh approximation, "gelu_new") -> c_proj; then
// the final LayerNorm ln_f. Every norm uses eps layer_norm_eps.
//
// GPT-2's Conv1D stores its weight as (in, out) and computes x @ W + b; nn::Linear wants (out, in).
// chatterbox-convert stores each Conv1D weight transposed, as `<module>.weight_t` (out, in), so it is
// quantised by output rows like any Linear weight; the official file's (in, out) weight is
// transposed once at load instead (uploaded as f32).

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

// One GPT-2 block (tfmr.h.<i>).
struct Gpt2Layer {
    nn::LayerNorm ln_1;
    nn::Linear c_attn;    // hidden -> 3 hidden: [q | k | v]
    nn::Linear attn_proj; // attn.c_proj
    nn::LayerNorm ln_2;
    nn::FeedForward mlp; // mlp.c_fc -> gelu_tanh -> mlp.c_proj
};

struct Gpt2Backbone {
    ggml_tensor *wpe = nullptr; // (positions, hidden) f32: tfmr.wpe
    std::vector<Gpt2Layer> layers;
    nn::LayerNorm ln_f;

    // Binds tfmr.wpe, tfmr.h.* and tfmr.ln_f (tfmr.wte is present and unused, as the official code
    // deletes it: inputs are embeddings).
    Gpt2Backbone(ModuleWeights &w, const HParams &hp);

    // Adds wpe at in.positions, writes the new keys/values into cache and runs every block: the
    // residual stream (hidden, n_tokens * n_rows) before ln_f.
    ggml_tensor *layers_graph(ggml_context *ctx, const HParams &hp, const KvCache &cache, const BackboneInputs &in,
                              nn::AttentionPath attention) const;
    ggml_tensor *normalize(ggml_context *ctx, ggml_tensor *x) const { return ln_f(ctx, x); }
    std::vector<const ggml_tensor *> step_tensors() const;
};

// GPT-2's Conv1D `<prefix>.weight_t` (out, in) or `<prefix>.weight` (in, out), and `<prefix>.bias`
// (out), as an nn::Linear.
nn::Linear conv1d_as_linear(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out);

// The last name part of a Conv1D weight stored transposed.
constexpr const char *kTransposedConv1dWeight = "weight_t";
// True for the store name of a GPT-2 Conv1D weight in its official (in, out) layout
// ("t3.tfmr.h.<i>.attn.c_attn.weight", attn.c_proj, mlp.c_fc, mlp.c_proj).
bool is_conv1d_weight(const std::string &name);
// "<module>.weight" -> "<module>.weight_t".
std::string transposed_conv1d_name(const std::string &name);

} // namespace chatterbox::t3
