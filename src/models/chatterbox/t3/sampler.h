#pragma once
// T3 token sampling at HEAD (spec t3.md §5), one function per stage so each can be checked alone.
// Which stages run, in which order, is the variant's SamplerRecipe:
//   English / multilingual: CFG combine -> repetition penalty -> temperature -> min-p -> top-p
//   Turbo / Nano:           temperature -> top-k -> top-p -> repetition penalty (no CFG, no min-p)
// then softmax -> multinomial (or argmax when greedy). The stages follow the HF processors
// (RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper, MinPLogitsWarper,
// TopPLogitsWarper, transformers 5.2) on one row of logits; removed tokens become -inf.
//
// Randomness: one TorchGenerator per generation, seeded with SamplingParams::seed as
// torch.manual_seed, and the draw is torch.multinomial(probs, 1)'s: argmax(p / q) over an
// exponential row (core/torch_generator.h). So a seed draws the tokens the official generate() draws
// from the same probabilities, on every platform and backend.

#include "core/torch_generator.h"
#include "models/chatterbox/t3/speech_guards.h"

#include <cstdint>
#include <vector>

namespace chatterbox::t3 {

// The defaults are English's (tts.py generate()); SamplerRecipe::defaults has each variant's.
struct SamplingParams {
    float temperature = 0.8f;
    // 0 for either: the variant's default (SamplerRecipe::defaults, taken by process_logits): top_k
    // Turbo 1000 (English has no top-k stage), top_p English 1 = off, Turbo 0.95.
    int top_k = 0;      // k >= the vocabulary keeps every token
    float top_p = 0.0f; // 1 = off
    float min_p = 0.05f;
    float repetition_penalty = 1.2f;
    float cfg_weight = 0.5f; // 0 = no guidance (a single conditional row is run)
    bool greedy = false;     // argmax of the penalised logits instead of sampling; temperature is then unused
    int max_new_tokens = 1000;
    uint64_t seed = 0;
    // Never end at EOS: a step that chooses EOS chooses again without it, so generation always runs
    // max_new_tokens steps (benchmarks that compare like with like). The steps before are unchanged.
    bool ignore_eos = false;
    // Guards against runaway speech (speech_guards.h), all off here: the official loop. With
    // ignore_eos the length bound and stop rules do not apply (the analyzer still runs).
    GuardOptions guards;

    // SynthesisParams' defaults: the length bound and stop rules on, the alignment analyzer off.
    static SamplingParams guarded();

    // Throws Error naming the parameter, its value and the accepted range. max_new_tokens_limit is
    // the model's bound (HParams::max_new_tokens_limit()).
    void validate(int max_new_tokens_limit) const;
    // These parameters with the 0s ("the variant's default") replaced by defaults' values.
    SamplingParams with_defaults(const SamplingParams &defaults) const;
};

using Rng = TorchGenerator;

// One logits processor.
enum class LogitsStage { repetition_penalty, temperature, top_k, min_p, top_p };

// How a variant's official generate() turns logits into a token: the processors in order, whether
// it runs the CFG rows, what the repetition penalty sees, and its default parameters. Parameters
// of stages the recipe lacks (min_p, top_k, cfg_weight) are ignored, as the official Turbo
// generate() ignores them.
struct SamplerRecipe {
    std::vector<LogitsStage> stages;
    bool guidance = true; // cfg_weight > 0 runs the unconditional row too
    // The penalty's history starts with the BOS token at every step (HF generate's ids), or only
    // at step 0, later steps seeing the generated tokens alone (inference_turbo's input_ids).
    bool history_keeps_bos = true;
    SamplingParams defaults;

    // tts.py generate() (English, multilingual): CFG, repetition penalty, temperature, min-p, top-p.
    static SamplerRecipe tts();
    // tts_turbo.py generate() (Turbo, Nano): temperature, top-k, top-p, repetition penalty; no CFG.
    static SamplerRecipe tts_turbo();
};

// logits = cond + w * (cond - uncond)
std::vector<float> cfg_combine(const float *cond, const float *uncond, size_t n, float cfg_weight);

// For every distinct id in history: l = l < 0 ? l * penalty : l / penalty (once per id, HF semantics).
// Ids outside the logits are an error.
void apply_repetition_penalty(std::vector<float> &logits, const std::vector<int32_t> &history, float penalty);

// l /= temperature, skipped for exactly 1 as the reference does.
void apply_temperature(std::vector<float> &logits, float temperature);

// Keeps the tokens whose logit is at least the k-th largest (ties at the boundary stay, as HF's
// TopKLogitsWarper); k <= 0 or k >= the vocabulary keeps all.
void apply_top_k(std::vector<float> &logits, int top_k);

// Removes tokens whose probability is below min_p * (highest probability); the top token always stays.
void apply_min_p(std::vector<float> &logits, float min_p);

// Sorting ascending, removes tokens whose cumulative probability is <= 1 - top_p; the top token
// always stays.
void apply_top_p(std::vector<float> &logits, float top_p);

std::vector<float> softmax(const std::vector<float> &logits);

// Index of the largest value (the first one on ties, like torch.argmax).
int argmax(const std::vector<float> &values);

// Draws an index with probability proportional to probs (non-negative, finite, positive sum) as
// torch.multinomial(probs, 1) does: TorchGenerator::multinomial_one, 2 words per element.
int sample_multinomial(const std::vector<float> &probs, Rng &rng);

// The recipe's stages on one row of (CFG-combined) logits, in place: what the draw sees. history:
// the ids the repetition penalty sees. Greedy decoding skips the temperature (it cannot change
// the argmax). penalized, when given, receives the logits right after the repetition penalty.
void process_logits(std::vector<float> &logits, const SamplerRecipe &recipe, const std::vector<int32_t> &history,
                    const SamplingParams &params, std::vector<float> *penalized = nullptr);

// process_logits, then argmax (params.greedy) or softmax -> one multinomial draw. Throws Error for
// NaN or +inf logits, or when every logit is -inf.
int choose_token(std::vector<float> &logits, const SamplerRecipe &recipe, const std::vector<int32_t> &history,
                 const SamplingParams &params, Rng &rng, std::vector<float> *penalized = nullptr);

} // namespace chatterbox::t3
