#include "models/chatterbox/t3/cond_encoder.h"

#include "core/error.h"
#include "core/graph.h"
#include "models/chatterbox/t3/embeddings.h"

#include <cmath>

namespace chatterbox::t3 {

namespace {

// AttentionBlock2(x1, x2): one LayerNorm for both inputs, residual on the un-normalised x1.
ggml_tensor *perceiver_block(ggml_context *ctx, const PerceiverWeights &w, ggml_tensor *x1, ggml_tensor *x2) {
    ggml_tensor *n1 = w.norm(ctx, x1);
    ggml_tensor *n2 = x2 == x1 ? n1 : w.norm(ctx, x2);
    return ggml_add(ctx, x1, w.attn(ctx, n1, n2, nn::AttentionOptions{}));
}

void validate(const HParams &hp, const Conditioning &cond) {
    if (int(cond.speaker_emb.size()) != hp.speaker_embed)
        fail("T3 conditioning: speaker embedding has ", cond.speaker_emb.size(), " values, expected ",
             hp.speaker_embed);
    for (size_t i = 0; i < cond.speaker_emb.size(); ++i)
        if (!std::isfinite(cond.speaker_emb[i]))
            fail("T3 conditioning: speaker embedding value ", i, " is not finite (", cond.speaker_emb[i], ")");
    if (int(cond.prompt_tokens.size()) > hp.max_prompt_tokens())
        fail("T3 conditioning: speech prompt of ", cond.prompt_tokens.size(), " tokens exceeds the ",
             hp.max_prompt_tokens(), " positions the model has for it");
    for (size_t i = 0; i < cond.prompt_tokens.size(); ++i)
        if (cond.prompt_tokens[i] < 0 || cond.prompt_tokens[i] >= hp.speech_vocab)
            fail("T3 conditioning: prompt token ", i, " = ", cond.prompt_tokens[i], " is outside [0, ", hp.speech_vocab,
                 ")");
    if (!std::isfinite(cond.exaggeration))
        fail("T3 conditioning: exaggeration is not finite (", cond.exaggeration, ")");
}

} // namespace

CondEmbeddings encode_conditioning(const T3Model &model, Backend &backend, const Conditioning &cond) {
    const HParams &hp = model.hparams();
    validate(hp, cond);
    const int64_t hidden = hp.hidden;
    const int n_prompt = int(cond.prompt_tokens.size());
    const bool perceive = n_prompt > 0 && hp.has_perceiver();

    // speech_emb(prompt) (+ speech_pos_emb(0 .. P-1) where the model has the table)
    std::vector<float> prompt_emb;
    prompt_emb.reserve(size_t(n_prompt) * size_t(hidden));
    for (int i = 0; i < n_prompt; ++i) {
        const std::vector<float> row = speech_token_embedding(model, cond.prompt_tokens[size_t(i)], i);
        prompt_emb.insert(prompt_emb.end(), row.begin(), row.end());
    }

    GraphRunner graph(backend, 512);
    ggml_context *ctx = graph.ctx();
    ggml_tensor *speaker = graph.input("speaker_emb", GGML_TYPE_F32, {1, hp.speaker_embed});
    std::vector<ggml_tensor *> outputs{model.speaker_proj()(ctx, speaker)}; // (hidden, 1)
    ggml_tensor *prompt = nullptr;
    if (perceive) {
        prompt = graph.input("prompt_emb", GGML_TYPE_F32, {n_prompt, hidden});
        const PerceiverWeights &pw = model.perceiver();
        ggml_tensor *queries = ggml_reshape_2d(ctx, pw.queries, hidden, hp.perceiver_queries);
        ggml_tensor *cross = perceiver_block(ctx, pw, queries, prompt); // queries attend to the prompt
        outputs.push_back(perceiver_block(ctx, pw, cross, cross));      // then to themselves, same weights
    }
    graph.build(outputs);

    graph.set_input(speaker, cond.speaker_emb);
    if (perceive) graph.set_input(prompt, prompt_emb);
    graph.compute();

    CondEmbeddings out;
    out.length = hp.cond_length(n_prompt);
    out.values.reserve(size_t(out.length) * size_t(hidden));
    for (ggml_tensor *t : outputs) {
        std::vector<float> part = graph.read_f32(t);
        out.values.insert(out.values.end(), part.begin(), part.end());
    }
    if (!perceive) out.values.insert(out.values.end(), prompt_emb.begin(), prompt_emb.end()); // as they are
    for (float w : model.emotion_weight()) out.values.push_back(cond.exaggeration * w);
    return out;
}

} // namespace chatterbox::t3
