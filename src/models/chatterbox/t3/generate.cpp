#include "models/chatterbox/t3/generate.h"

#include "core/error.h"
#include "models/chatterbox/t3/embeddings.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace chatterbox::t3 {

void LogitsLog::append(const StepRecord &step) {
    raw.insert(raw.end(), step.raw->begin(), step.raw->end());
    cfg.insert(cfg.end(), step.cfg->begin(), step.cfg->end());
    penalized.insert(penalized.end(), step.penalized->begin(), step.penalized->end());
    processed.insert(processed.end(), step.processed->begin(), step.processed->end());
}

namespace {

SpeechGuards speech_guards(const HParams &hp, const std::vector<int32_t> &text_tokens, const SamplingParams &params,
                           int max_steps) {
    GuardOptions options = params.guards;
    if (params.ignore_eos) options.length_bound = options.stops = false; // always max_new_tokens steps
    return SpeechGuards(hp, int(text_tokens.size()) - 2 * hp.framed_text, options, max_steps);
}

} // namespace

int step_limit(const HParams &hp, const std::vector<int32_t> &text_tokens, const SamplingParams &params) {
    return speech_guards(hp, text_tokens, params, params.max_new_tokens).step_limit();
}

GenerationResult generate(Session &session, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens,
                          const SamplingParams &params, const GenerationHooks &hooks) {
    const Model &model = session.model();
    const HParams &hp = model.hparams();
    params.validate(hp.max_new_tokens_limit());
    const SamplerRecipe &recipe = sampler_recipe(hp.variant);
    validate_text_tokens(hp, text_tokens);
    for (size_t i = 0; i < hooks.forced_tokens.size(); ++i)
        if (hooks.forced_tokens[i] < 0 || hooks.forced_tokens[i] >= hp.speech_vocab)
            fail("T3 forced token ", i, " = ", hooks.forced_tokens[i], " is outside the speech vocabulary [0, ",
                 hp.speech_vocab, ")");

    const bool use_cfg = recipe.guidance && params.cfg_weight > 0;
    const int n_rows = use_cfg ? 2 : 1;
    const bool teacher_forced = !hooks.forced_tokens.empty();
    int max_steps = params.max_new_tokens;
    if (teacher_forced) max_steps = std::min(max_steps, int(hooks.forced_tokens.size()));
    const size_t vocab = size_t(hp.speech_vocab);

    const int length = prefill_length(hp, cond, text_tokens);
    // The text's key positions: the prefill ends with it and then the BOS tokens.
    const int text_end = length - hp.bos_tokens, text_begin = text_end - int(text_tokens.size());
    // The cache is reserved for the request's max_new_tokens, not the bound: pieces of one request
    // then share one cache and its graphs, however their bounds differ.
    const int reserved_steps = max_steps;
    SpeechGuards guards = speech_guards(hp, text_tokens, params, max_steps);
    max_steps = guards.step_limit();
    std::optional<AlignmentAnalyzer> analyzer;
    if (params.guards.alignment) {
        if (hp.guards.aligned_heads.empty())
            fail("the ", variant_name(hp.variant), " T3 has no alignment analyzer (no aligned attention heads)");
        analyzer.emplace(text_begin, text_end, hp.stop_speech_token);
    }
    session.watch_heads(analyzer ? hp.guards.aligned_heads : std::vector<AttentionHead>{});
    // The tokens of steps 0 .. max_steps - 2 go in at positions length, length + 1, ...
    if (hp.max_sequence() > 0 && length + reserved_steps - 1 > hp.max_sequence())
        fail("T3 request of ", length, " prefill positions + ", reserved_steps, " new tokens exceeds the ",
             hp.max_sequence(), " positions of the model");
    // Step i feeds its token for step i + 1: at most reserved_steps - 1 tokens follow the prefill in the cache.
    std::vector<float> raw =
        session.prefill(prefill_embeddings(model, cond, text_tokens, n_rows), n_rows, length, reserved_steps - 1);

    Rng rng(params.seed);
    std::vector<int32_t> history{hp.start_speech_token}; // HF's generated_ids start with the BOS
    GenerationResult result;
    result.step_limit = max_steps;
    result.bound_by_text = guards.bound_by_text();
    int32_t last_token = hp.start_speech_token; // the analyzer's generated_ids[0, -1]
    for (int step = 0; step < max_steps; ++step) {
        std::vector<float> cfg = use_cfg ? cfg_combine(raw.data(), raw.data() + vocab, vocab, params.cfg_weight)
                                         : std::vector<float>(raw.begin(), raw.begin() + std::ptrdiff_t(vocab));
        bool eos_forced = false;
        if (analyzer) { // step 0: the prefill's rows after the text (the BOS rows); later the new row
            const Session::AttentionRows &attention = session.watched_attention();
            const int first_row = step == 0 ? text_end : 0, n_rows_seen = step == 0 ? length - text_end : 1;
            eos_forced = analyzer->step(attention.row(first_row), n_rows_seen, attention.row_length, last_token, cfg);
        }
        std::vector<float> processed = cfg, penalized;
        int32_t token;
        if (teacher_forced) {
            process_logits(processed, recipe, history, params, &penalized);
            token = hooks.forced_tokens[size_t(step)];
        } else {
            token = choose_token(processed, recipe, history, params, rng, &penalized);
            if (token == hp.stop_speech_token && params.ignore_eos) {
                if (result.eos_step < 0) result.eos_step = step;
                std::vector<float> work = cfg;
                work[size_t(hp.stop_speech_token)] = -INFINITY; // a second draw, among the other tokens
                token = choose_token(work, recipe, history, params, rng);
            }
        }
        result.tokens.push_back(token);
        if (step == 0 && !recipe.history_keeps_bos) history.clear();
        history.push_back(token);
        const bool go_on = !hooks.on_step || hooks.on_step(StepRecord{step, &raw, &cfg, &penalized, &processed, token});
        last_token = token;
        if (token == hp.stop_speech_token) {
            result.eos_step = step;
            result.end = eos_forced ? PieceEnd::alignment : PieceEnd::eos;
            break;
        }
        const std::optional<PieceEnd> stop =
            guards.after_token(token, analyzer ? std::optional<bool>(analyzer->complete()) : std::nullopt);
        if (stop) {
            result.end = *stop;
            break;
        }
        if (!go_on) {
            result.end = PieceEnd::stopped;
            break;
        }
        if (step + 1 == max_steps) {
            result.end = guards.bound_by_text()                                           ? PieceEnd::length_bound
                         : teacher_forced && max_steps == int(hooks.forced_tokens.size()) ? PieceEnd::stopped
                                                                                          : PieceEnd::max_tokens;
            break;
        }
        raw = session.decode(speech_token_embedding(model, token, step + 1));
    }
    return result;
}

GenerationResult generate(Session &session, const Conditioning &cond, const std::vector<int32_t> &text_tokens,
                          const SamplingParams &params, const GenerationHooks &hooks) {
    params.validate(session.model().hparams().max_new_tokens_limit());
    validate_text_tokens(session.model().hparams(), text_tokens);
    return generate(session, encode_conditioning(session.model(), session.backend(), cond), text_tokens, params, hooks);
}

std::vector<int32_t> drop_invalid_tokens(const std::vector<int32_t> &tokens, const HParams &hp) {
    auto begin = std::find(tokens.begin(), tokens.end(), hp.start_speech_token);
    begin = begin == tokens.end() ? tokens.begin() : begin + 1;
    auto end = std::find(tokens.begin(), tokens.end(), hp.stop_speech_token);
    std::vector<int32_t> kept;
    for (auto it = begin; it < end; ++it)
        if (*it < hp.speech_token_limit) kept.push_back(*it);
    return kept;
}

} // namespace chatterbox::t3
