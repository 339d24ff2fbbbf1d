#pragma once
// Input embeddings of the backbone (spec t3.md §4), assembled on the host from the model's tables.

#include "models/chatterbox/t3/cond_encoder.h"
#include "models/chatterbox/t3/model.h"

#include <cstdint>
#include <vector>

namespace chatterbox::t3 {

// Throws Error unless tokens are the text the model takes: with HParams::framed_text [start_text] +
// at least one id + [stop_text], else at least one bare id (Turbo); every id inside the text
// vocabulary, no more than HParams::max_framed_text() in all.
void validate_text_tokens(const HParams &hp, const std::vector<int32_t> &text_tokens);

// Prefill length: conditioning + text + the BOS tokens (HParams::bos_tokens).
int prefill_length(const HParams &hp, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens);

// (n_rows, prefill_length, hidden), row-major. Each row is
//   [cond | text_emb(text) + text_pos_emb(0..) | BOS | BOS], BOS = speech_emb(6561) + speech_pos_emb(0),
// the second BOS reproducing the reference's double BOS; a model without learned position tables
// adds none, and Turbo's prefill ends with one BOS. With n_rows == 2 (CFG) row 1 is the
// unconditional row: its text token embeddings are zero, everything else (text positions
// included) equals row 0.
std::vector<float> prefill_embeddings(const T3Model &model, const CondEmbeddings &cond,
                                      const std::vector<int32_t> &text_tokens, int n_rows);

// speech_emb(token) + speech_pos_emb(position) (the latter only where the model has the table):
// (hidden). Generated token i goes in at position i + 1.
std::vector<float> speech_token_embedding(const T3Model &model, int32_t token, int position);

} // namespace chatterbox::t3
