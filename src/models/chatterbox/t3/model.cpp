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

namespace {

BackboneWeights bind_backbone(ModuleWeights &w, const HParams &hp) {
    switch (hp.backbone_kind()) {
    case Backbone::llama:
        return LlamaBackbone(w, hp);
    case Backbone::gpt2:
        return Gpt2Backbone(w, hp);
    }
    fail("T3: unknown backbone ", hp.backbone);
}

} // namespace

T3Model::T3Model(const WeightStore &store, Backend &backend, const HParams &hp, const std::string &prefix)
    : hp_(hp), weights_(store, prefix, backend) {
    const int64_t h = hp_.hidden;
    ModuleWeights &w = weights_;
    backbone_ = bind_backbone(w, hp_);
    // T3: nn.Linear(hidden, speech vocab, bias=self.is_gpt)
    speech_head_ = nn::Linear(w, "speech_head", h, hp_.speech_vocab, /*bias=*/hp_.backbone_kind() == Backbone::gpt2);

    speaker_proj_ = nn::Linear(w, "cond_enc.spkr_enc", hp_.speaker_embed, h);
    if (hp_.emotion_token) emotion_weight_ = w.host_f32("cond_enc.emotion_adv_fc.weight", {h, 1});
    if (hp_.has_perceiver()) {
        const std::string attn = "cond_enc.perceiver.attn.";
        perceiver_.queries =
            w.get("cond_enc.perceiver.pre_attention_query", {1, hp_.perceiver_queries, h}, WeightUse::f32);
        perceiver_.norm = nn::LayerNorm(w, attn + "norm", h, hp_.layer_norm_eps);
        perceiver_.attn = nn::MultiHeadAttention(nn::Linear(w, attn + "to_q", h, h), nn::Linear(w, attn + "to_k", h, h),
                                                 nn::Linear(w, attn + "to_v", h, h),
                                                 nn::Linear(w, attn + "proj_out", h, h), hp_.perceiver_heads);
    }

    text_emb_ = host_table("text_emb.weight", hp_.text_vocab);
    speech_emb_ = host_table("speech_emb.weight", hp_.speech_vocab);
    if (hp_.has_learned_positions()) {
        text_pos_emb_ = host_table("text_pos_emb.emb.weight", hp_.text_positions);
        speech_pos_emb_ = host_table("speech_pos_emb.emb.weight", hp_.speech_positions);
    }

    // Present in the checkpoint, never used at inference: the text head (only the training loss uses it).
    w.ignore("text_head.");
    w.load();
}

std::vector<const ggml_tensor *> T3Model::step_tensors() const {
    std::vector<const ggml_tensor *> tensors =
        std::visit([](const auto &backbone) { return backbone.step_tensors(); }, backbone());
    tensors.push_back(speech_head_.weight);
    return tensors;
}

EmbeddingTable T3Model::host_table(const std::string &name, int rows) {
    return EmbeddingTable(weights_.prefix() + name, rows, hp_.hidden, weights_.host_f32(name, {rows, hp_.hidden}));
}

} // namespace chatterbox::t3
