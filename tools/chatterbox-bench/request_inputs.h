#pragma once
// T3 inputs with the shapes of a real request (a speech prompt, framed text); their values do not
// change the cost, so the benchmarks draw them from a fixed seed.

#include "models/chatterbox/t3/cond_encoder.h"

#include <cstdint>
#include <random>
#include <vector>

namespace chatterbox::bench {

struct RequestInputs {
    t3::Conditioning voice;
    std::vector<int32_t> text; // [start_text] + ids + [stop_text]
};

RequestInputs request_inputs(const t3::HParams &hp, int prompt_tokens, int text_tokens, std::mt19937_64 &rng);

} // namespace chatterbox::bench
