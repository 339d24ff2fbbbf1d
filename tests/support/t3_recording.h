#pragma once
// A T3 generation with every step's logits kept, for the golden T3 tests (English and Turbo).

#include "models/chatterbox/t3/generate.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::test {

// How far the fast path (flash attention, f16 KV cache) may move T3 logits: it rounds keys/values
// (and the FA accumulator) to f16, which moves them by ~5e-3.
constexpr double kT3FastPathTolerance = 2e-2;

// The int64 token ids of an .npy file as int32.
std::vector<int32_t> read_tokens(const std::string &npy_path);

// Per step, concatenated (t3::LogitsLog): raw (n_rows x vocab), after CFG, after the repetition
// penalty, after the whole sampler recipe.
struct T3Recording : t3::LogitsLog {
    t3::GenerationResult result;
};

// generate() with forced tokens (teacher forcing; none: the tokens are chosen) and every step recorded.
T3Recording record_generation(t3::T3Session &session, const t3::CondEmbeddings &cond,
                              const std::vector<int32_t> &text_tokens, const t3::SamplingParams &params,
                              const std::vector<int32_t> &forced = {});

} // namespace chatterbox::test
