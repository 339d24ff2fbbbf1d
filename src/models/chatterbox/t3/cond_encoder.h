#pragma once
// The T3 conditioning encoder (spec t3.md §3): speaker projection, perceiver resampler over the
// speech prompt, emotion token. Runs once per voice + exaggeration; its output prefixes both CFG rows.
// Turbo/Nano (no perceiver, no emotion): [speaker projection | speech_emb(prompt tokens)].

#include "models/chatterbox/t3/model.h"

#include <cstdint>
#include <vector>

namespace chatterbox::t3 {

// T3Cond of the reference code.
struct Conditioning {
    std::vector<float> speaker_emb; // (256) VoiceEncoder embedding
    std::vector<int32_t>
        prompt_tokens; // speech prompt (≤ 150 S3 tokens, Turbo ≤ 375, in the official pipeline; may be empty)
    float exaggeration = 0.5f; // emotion_adv (unused by a model without the emotion token)
};

// (length, hidden) conditioning embeddings: [speaker | 32 perceiver outputs (if prompt) | emotion],
// or without perceiver and emotion [speaker | the prompt's speech embeddings].
struct CondEmbeddings {
    int length = 0;
    std::vector<float> values;
};

// Throws Error for a speaker embedding of the wrong size or with non-finite values, prompt tokens
// outside the speech vocabulary, a prompt longer than HParams::max_prompt_tokens(), or a non-finite
// exaggeration.
// The graph runs on backend.
CondEmbeddings encode_conditioning(const T3Model &model, Backend &backend, const Conditioning &cond);

} // namespace chatterbox::t3
