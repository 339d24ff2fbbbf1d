#pragma once
// The T3 weights (spec t3.md §2, §3, §8.1), bound once and then immutable: backbone, speech head
// and conditioning encoder live on the backend; the embedding tables stay on the host, where the
// few rows a call needs are looked up (one row per generated token, a hundred per prefill). The
// backbone is the one HParams::backbone names (Llama or GPT-2); the perceiver, the emotion token and
// the learned T3 position tables exist only where the hyper-parameters say so.

#include "core/backend.h"
#include "core/weight_store.h"
#include "models/chatterbox/t3/backbone_gpt2.h"
#include "models/chatterbox/t3/backbone_llama.h"
#include "models/chatterbox/t3/hparams.h"
#include "modules/attention.h"
#include "modules/linear.h"
#include "modules/module_weights.h"
#include "modules/norm.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace chatterbox::t3 {

// The decoder stack, one alternative per Backbone value.
using BackboneWeights = std::variant<LlamaBackbone, Gpt2Backbone>;

// The perceiver resampler: learned queries and ONE attention block (shared LayerNorm, 4 heads of
// 256), applied twice.
struct PerceiverWeights {
    ggml_tensor *queries = nullptr; // (1, 32, hidden) f32: pre_attention_query
    nn::LayerNorm norm;
    nn::MultiHeadAttention attn;
};

// An embedding table as f32 rows on the host.
class EmbeddingTable {
  public:
    EmbeddingTable() = default;
    EmbeddingTable(std::string name, int rows, int dim, std::vector<float> values);
    int rows() const { return rows_; }
    int dim() const { return dim_; }
    // Row i; throws when i is outside the table (a token id or position the model cannot embed).
    const float *row(int64_t i) const;
    // dst[d] += row(i)[d]
    void add_row(int64_t i, float *dst) const;

  private:
    std::string name_;
    int rows_ = 0;
    int dim_ = 0;
    std::vector<float> values_;
};

class T3Model {
  public:
    // Binds every tensor of the T3 checkpoint under prefix in store with the sizes of hp (all
    // problems reported in one Error) and uploads the backend part. The store may be dropped afterwards.
    T3Model(const WeightStore &store, Backend &backend, const HParams &hp, const std::string &prefix = "t3.");
    T3Model(const T3Model &) = delete;
    T3Model &operator=(const T3Model &) = delete;

    const HParams &hparams() const { return hp_; }
    size_t backend_bytes() const { return weights_.bytes(); }
    ggml_type matmul_type() const { return speech_head_.weight->type; } // storage type of the big matrices

    const BackboneWeights &backbone() const { return *backbone_; }
    // The backbone's tensors one decode step reads, the speech head's included (benchmarks).
    std::vector<const ggml_tensor *> step_tensors() const;
    const nn::Linear &speech_head() const { return speech_head_; }
    const nn::Linear &speaker_proj() const { return speaker_proj_; }
    // Only with HParams::has_perceiver().
    const PerceiverWeights &perceiver() const { return perceiver_; }
    // The (hidden) column of emotion_adv_fc: the emotion token is exaggeration * this (empty
    // without an emotion token).
    const std::vector<float> &emotion_weight() const { return emotion_weight_; }

    const EmbeddingTable &text_emb() const { return text_emb_; }
    const EmbeddingTable &speech_emb() const { return speech_emb_; }
    // Only with HParams::has_learned_positions() (empty tables otherwise).
    const EmbeddingTable &text_pos_emb() const { return text_pos_emb_; }
    const EmbeddingTable &speech_pos_emb() const { return speech_pos_emb_; }

  private:
    EmbeddingTable host_table(const std::string &name, int rows);

    HParams hp_;
    ModuleWeights weights_;
    std::optional<BackboneWeights> backbone_; // bound in the constructor body
    nn::Linear speech_head_;
    nn::Linear speaker_proj_;
    PerceiverWeights perceiver_;
    std::vector<float> emotion_weight_;
    EmbeddingTable text_emb_, speech_emb_, text_pos_emb_, speech_pos_emb_;
};

} // namespace chatterbox::t3
