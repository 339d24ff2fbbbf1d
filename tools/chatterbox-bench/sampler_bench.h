#pragma once
// T3's sampler per token, host only: the English recipe's stages on one CFG-combined row and the
// draw, with the draw as torch.multinomial (TorchGenerator: an exponential row, 2 MT19937 words per
// vocabulary entry) against the draw the engine had before (one uniform from std::mt19937_64 and an
// inverse CDF), interleaved in one run so both see the same machine load. Rows are synthetic:
// N(0, sigma) logits, sigma setting how many tokens survive min-p.

#include <nlohmann/json.hpp>

#include <vector>

namespace chatterbox::bench {

struct SamplerBenchArguments {
    int vocab = 8194;                          // English T3's speech vocabulary
    std::vector<double> sigmas{1.0, 3.0, 6.0}; // logit spread per run: many, some, few tokens kept
    int tokens = 2000;                         // timed tokens per draw and round
    int rounds = 5;                            // draws alternated this many times
};

// One JSON row per sigma: "sigma", "kept_tokens" (mean tokens left by min-p), "stages_us" (the
// recipe's stages and softmax per token), "torch_draw_us", "previous_draw_us" (the draw alone, median
// over rounds), "torch_token_us", "previous_token_us" (stages + draw), "loadavg" (1-minute, at the end).
nlohmann::json run_sampler_bench(const SamplerBenchArguments &options);

} // namespace chatterbox::bench
