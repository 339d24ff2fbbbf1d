#include "models/chatterbox/t3/model.h"

#include "core/error.h"

namespace chatterbox::t3 {

EmbeddingTable::EmbeddingTable(std::string name, int rows, int dim, std::vector<float> values)
    : name_(std::move(name)), rows_(rows), dim_(dim), values_(std::move(values)) {
    if (values_.size() != size_t(rows) * size_t(dim))
        fail("embedding table ", name_, ": ", values_.size(), " values for ", rows, " x ", dim);
}

const float *EmbeddingTable::row(int64_t i) const {
    if (i < 0 || i >= rows_) fail(name_, ": index ", i, " is outside the table (", rows_, " rows)");
    return values_.data() + size_t(i) * size_t(dim_);
}

void EmbeddingTable::add_row(int64_t i, float *dst) const {
    const float *src = row(i);
    for (int d = 0; d < dim_; ++d) dst[d] += src[d];
}

Model::Model(const WeightStore &store, Backend &backend, const HParams &hp, const std::string &prefix)
    : hp_(hp), backend_(backend), weights_(store, prefix, backend) {
    const int64_t h = hp_.hidden;
    ModuleWeights &w = weights_;
    layers_.resize(size_t(hp_.n_layers));
    for (int i = 0; i < hp_.n_layers; ++i) {
        const std::string p = "tfmr.layers." + std::to_string(i) + ".";
        LayerWeights &l = layers_[size_t(i)];
        l.attn_norm = w.get_f32(p + "input_layernorm.weight", {h});
        l.wq = w.get(p + "self_attn.q_proj.weight", {h, h});
        l.wk = w.get(p + "self_attn.k_proj.weight", {h, h});
        l.wv = w.get(p + "self_attn.v_proj.weight", {h, h});
        l.wo = w.get(p + "self_attn.o_proj.weight", {h, h});
        l.ffn_norm = w.get_f32(p + "post_attention_layernorm.weight", {h});
        l.w_gate = w.get(p + "mlp.gate_proj.weight", {hp_.ffn, h});
        l.w_up = w.get(p + "mlp.up_proj.weight", {hp_.ffn, h});
        l.w_down = w.get(p + "mlp.down_proj.weight", {h, hp_.ffn});
    }
    final_norm_ = w.get_f32("tfmr.norm.weight", {h});
    speech_head_ = w.get("speech_head.weight", {hp_.speech_vocab, h});
    rope_freq_factors_ = w.derived("rope_freq_factors", {hp_.head_dim / 2}, llama3_rope_freq_factors(hp_));

    speaker_proj_ = nn::Linear(w, "cond_enc.spkr_enc", hp_.speaker_embed, h);
    emotion_weight_ = w.host_f32("cond_enc.emotion_adv_fc.weight", {h, 1});
    const std::string attn = "cond_enc.perceiver.attn.";
    perceiver_.queries = w.get_f32("cond_enc.perceiver.pre_attention_query", {1, hp_.perceiver_queries, h});
    perceiver_.norm = nn::LayerNorm(w, attn + "norm", h, hp_.layer_norm_eps);
    perceiver_.attn = nn::MultiHeadAttention(nn::Linear(w, attn + "to_q", h, h), nn::Linear(w, attn + "to_k", h, h),
                                             nn::Linear(w, attn + "to_v", h, h), nn::Linear(w, attn + "proj_out", h, h),
                                             hp_.perceiver_heads);

    text_emb_ = host_table("text_emb.weight", hp_.text_vocab);
    speech_emb_ = host_table("speech_emb.weight", hp_.speech_vocab);
    text_pos_emb_ = host_table("text_pos_emb.emb.weight", hp_.text_positions);
    speech_pos_emb_ = host_table("speech_pos_emb.emb.weight", hp_.speech_positions);

    // Present in the checkpoint, never used at inference: the backbone's own token table (inputs
    // are always embeddings) and the text head (only the training loss uses it).
    w.ignore("tfmr.embed_tokens.");
    w.ignore("text_head.");
    w.load();
}

EmbeddingTable Model::host_table(const std::string &name, int rows) {
    return EmbeddingTable(weights_.prefix() + name, rows, hp_.hidden, weights_.host_f32(name, {rows, hp_.hidden}));
}

} // namespace chatterbox::t3
