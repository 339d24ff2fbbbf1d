#include "models/chatterbox/t3/embeddings.h"

#include "core/error.h"

#include <algorithm>

namespace chatterbox::t3 {

void validate_text_tokens(const HParams &hp, const std::vector<int32_t> &text_tokens) {
    const size_t frame = hp.framed_text ? 2 : 0;
    if (hp.framed_text && (text_tokens.size() < 2 || text_tokens.front() != hp.start_text_token ||
                           text_tokens.back() != hp.stop_text_token))
        fail("T3 text tokens must be framed as [", hp.start_text_token, "] + ids + [", hp.stop_text_token, "]; got ",
             text_tokens.size(), " tokens");
    if (text_tokens.size() == frame)
        fail("T3 text is empty", hp.framed_text ? " (no tokens between the start and stop tokens)" : "");
    if (int(text_tokens.size()) > hp.max_framed_text())
        fail("T3 text of ", text_tokens.size() - frame, " tokens is too long: the model places at most ",
             hp.max_framed_text() - int(frame),
             hp.framed_text ? concat(" (", hp.max_framed_text(), " with the start and stop tokens)") : "");
    for (size_t i = 0; i < text_tokens.size(); ++i)
        if (text_tokens[i] < 0 || text_tokens[i] >= hp.text_vocab)
            fail("T3 text token ", i, " = ", text_tokens[i], " is outside the text vocabulary [0, ", hp.text_vocab,
                 ")");
}

int prefill_length(const HParams &hp, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens) {
    return cond.length + int(text_tokens.size()) + hp.bos_tokens;
}

std::vector<float> prefill_embeddings(const T3Model &model, const CondEmbeddings &cond,
                                      const std::vector<int32_t> &text_tokens, int n_rows) {
    const HParams &hp = model.hparams();
    const size_t hidden = size_t(hp.hidden);
    if (cond.values.size() != size_t(cond.length) * hidden)
        fail("T3 conditioning: ", cond.values.size(), " values for ", cond.length, " x ", hidden);
    if (n_rows != 1 && n_rows != 2) fail("T3 prefill: ", n_rows, " rows (1, or 2 with CFG)");
    const size_t length = size_t(prefill_length(hp, cond, text_tokens));
    const std::vector<float> bos = speech_token_embedding(model, hp.start_speech_token, 0);
    std::vector<float> embeds(size_t(n_rows) * length * hidden, 0.0f);
    for (int r = 0; r < n_rows; ++r) {
        float *row = embeds.data() + size_t(r) * length * hidden;
        std::copy(cond.values.begin(), cond.values.end(), row);
        float *text = row + size_t(cond.length) * hidden;
        for (size_t j = 0; j < text_tokens.size(); ++j) {
            if (r == 0) model.text_emb().add_row(text_tokens[j], text + j * hidden);
            if (hp.has_learned_positions()) model.text_pos_emb().add_row(int64_t(j), text + j * hidden);
        }
        for (size_t b = length - size_t(hp.bos_tokens); b < length; ++b)
            std::copy(bos.begin(), bos.end(), row + b * hidden);
    }
    return embeds;
}

std::vector<float> speech_token_embedding(const T3Model &model, int32_t token, int position) {
    std::vector<float> embed(size_t(model.hparams().hidden), 0.0f);
    model.speech_emb().add_row(token, embed.data());
    if (model.hparams().has_learned_positions()) model.speech_pos_emb().add_row(position, embed.data());
    return embed;
}

} // namespace chatterbox::t3
