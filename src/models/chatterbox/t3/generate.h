#pragma once
// T3 generation (spec t3.md §4–5, the loop of T3.inference / T3.inference_turbo): prefill the
// prefix (conditioning, text, BOS), then per step combine the CFG rows (where the variant has
// them), run the variant's sampler recipe (hp.sampler), choose a token, feed it
// back at the next speech position, until EOS (unless SamplingParams::ignore_eos) or max_new_tokens.

#include "models/chatterbox/t3/cond_encoder.h"
#include "models/chatterbox/t3/sampler.h"
#include "models/chatterbox/t3/session.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace chatterbox::t3 {

// What a hook sees at every step (views valid during the call only).
struct StepRecord {
    int step = 0;                            // 0-based
    const std::vector<float> *raw = nullptr; // (n_rows, vocab) backbone logits: row 0 conditional, row 1 unconditional
    const std::vector<float> *cfg = nullptr; // (vocab) after the CFG combination (row 0 when cfg_weight is 0)
    const std::vector<float> *penalized = nullptr; // (vocab) right after the repetition penalty stage
    const std::vector<float> *processed = nullptr; // (vocab) after every stage of the recipe: what the draw sees
    int32_t token = 0;                             // the token taken: sampled, argmax or forced
};

// Every step's logits, concatenated (the golden stages and tests record them from on_step).
struct LogitsLog {
    std::vector<float> raw, cfg, penalized, processed;
    void append(const StepRecord &step);
};

struct GenerationHooks {
    // Called after every step; returning false stops generation after that token (cancellation).
    std::function<bool(const StepRecord &)> on_step;
    // Whether on_step reads the logits of its StepRecord; false lets a batch pass it only the step
    // and token (the logit pointers are then null), sparing a copy of four vocab-sized rows per step.
    bool step_logits = true;
    // Teacher forcing: step i takes forced_tokens[i] instead of a chosen token; generation stops when
    // they run out (or on EOS, even with ignore_eos, or max_new_tokens). Ids must be inside the speech
    // vocabulary.
    std::vector<int32_t> forced_tokens;
    // The generator to draw from instead of a new one seeded with params.seed: a request's later text
    // pieces continue where the one before left it (GenerationResult::generator), as the official
    // single pass over the whole text draws one stream after torch.manual_seed.
    std::optional<TorchGenerator> generator;
};

struct GenerationResult {
    std::vector<int32_t> tokens; // every token taken, the final EOS included when one ended generation
    // The first step that took EOS, -1 when none did. With params.ignore_eos it is the step at which
    // generation would have ended; that step then took another token.
    int eos_step = -1;
    bool reached_eos() const { return eos_step >= 0; }
    // Why generation ended, and the steps it was allowed: max_new_tokens, or the length bound from
    // the text when params.guards asks for it and it is lower (bound_by_text).
    PieceEnd end = PieceEnd::max_tokens;
    int step_limit = 0;
    bool bound_by_text = false;
    // The generator after the last draw, for the request's next piece (GenerationHooks::generator).
    std::optional<TorchGenerator> generator;
};

// One request's generation as a step machine, so that a loop over one session (generate() below)
// and a batch scheduler stepping many requests in one graph (batch.h) run the same
// per-step logic: CFG combination, analyzer, sampler, guards, hooks. The caller prefills
// prefill_embeddings() with watched_heads() watched, then feeds each step's logits to step() and,
// while it returns true, decodes next_embedding() at the next position.
class Generation {
  public:
    // Validates everything generate() does (Error before any computation).
    Generation(const T3Model &model, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens,
               const SamplingParams &params, const GenerationHooks &hooks = {});

    int n_rows() const { return n_rows_; }                   // 2 with CFG, else 1
    int prefill_length() const { return length_; }           // positions of the prefill
    int reserved_steps() const { return reserved_steps_; }   // cache room: prefill + reserved_steps - 1 tokens
    const std::vector<AttentionHead> &watched_heads() const; // the analyzer's heads, or none
    // (n_rows, prefill_length, hidden), row-major.
    std::vector<float> prefill_embeddings() const;

    // Takes the token of the next step from raw (n_rows, vocab) backbone logits (the prefill's for
    // step 0) and attention (the watched heads' rows of the same computation; nullptr when none are
    // watched). Returns true when generation goes on: next_embedding() is then the next input.
    bool step(const std::vector<float> &raw, const T3Session::AttentionRows *attention);
    std::vector<float> next_embedding() const;
    int steps_taken() const { return int(result_.tokens.size()); }
    GenerationResult result() const; // with the generator as the last step left it

  private:
    const T3Model &model_;
    const SamplerRecipe &recipe_;
    SamplingParams params_;
    GenerationHooks hooks_;
    CondEmbeddings cond_;
    std::vector<int32_t> text_tokens_;
    bool use_cfg_ = false;
    int n_rows_ = 1, length_ = 0, text_end_ = 0, reserved_steps_ = 0, max_steps_ = 0;
    SpeechGuards guards_;
    std::optional<AlignmentAnalyzer> analyzer_;
    Rng rng_;
    std::vector<int32_t> history_;
    int32_t last_token_ = 0;
    GenerationResult result_;
};

// params.guards (speech_guards.h) adds the length bound, the stop rules and the alignment analyzer
// (which watches the attention of hp.guards.aligned_heads through the session; Error for a model
// without them); all off, the loop is the official one.
// text_tokens: as the model takes them (validate_text_tokens: framed [start_text] + ids + [stop_text],
// or Turbo's bare ids). Runs 2 CFG rows when params.cfg_weight > 0 and the recipe has guidance,
// else one conditional row. Throws Error for invalid parameters or tokens, or a request longer
// than the backbone's context (GPT-2's positions), before any computation.
// prefix: the conditioning's keys/values (prefix_cache.h), so that the prefill computes only the
// text and BOS; unused with the alignment analyzer (its attention rows cover the whole prefill).
GenerationResult generate(T3Session &session, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens,
                          const SamplingParams &params, const GenerationHooks &hooks = {},
                          const KvPrefix *prefix = nullptr);

// The steps generate() may take for this text and params: max_new_tokens, or the length bound from
// the text when params.guards asks for it (and ignore_eos is off) and it is lower.
int step_limit(const HParams &hp, const std::vector<int32_t> &text_tokens, const SamplingParams &params);

// The same from the voice inputs: encodes the conditioning (speaker embedding, prompt tokens,
// exaggeration), then generates. Callers that reuse one voice can encode once and call the above.
GenerationResult generate(T3Session &session, const Conditioning &cond, const std::vector<int32_t> &text_tokens,
                          const SamplingParams &params, const GenerationHooks &hooks = {});

// The tokens S3Gen gets (tts.py after T3, overview.md §2.3 step 8): the span after the first
// start-of-speech token (if any) and before the first end-of-speech token (if any), then only speech
// units (< 6561), which the flow can embed. The multilingual reference keeps every token of the span
// and then fails in the flow's embedding on an id of 6563..8193 (the golden set records the
// IndexError); this engine filters them for every variant, as the golden harness's workaround does.
//
// The rule token by token, for a piece streamed while T3 generates and one filtered after it alike:
// speak: the token goes to S3Gen; skip: it does not; restart: the first start-of-speech token, so
// every token spoken before it is dropped (a whole piece: drop_invalid_tokens; a stream cannot take
// back audio already out, and keeps it); end: the span is over, nothing more is spoken.
class SpeechTokenFilter {
  public:
    enum class Verdict { speak, skip, restart, end };
    explicit SpeechTokenFilter(const HParams &hp)
        : start_(hp.start_speech_token), stop_(hp.stop_speech_token), limit_(hp.speech_token_limit) {}
    Verdict push(int32_t token);

  private:
    int32_t start_, stop_, limit_;
    bool started_ = false, ended_ = false;
};

// The filter over a whole piece's tokens.
std::vector<int32_t> drop_invalid_tokens(const std::vector<int32_t> &tokens, const HParams &hp);

} // namespace chatterbox::t3
