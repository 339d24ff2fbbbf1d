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

// params, after the checks every generation makes before any computation.
const SamplingParams &validated(const HParams &hp, const std::vector<int32_t> &text_tokens,
                                const SamplingParams &params) {
    params.validate(hp.max_new_tokens_limit());
    validate_text_tokens(hp, text_tokens);
    return params;
}

// The steps a request may take before the guards: max_new_tokens, or fewer forced tokens.
int step_cap(const SamplingParams &params, const GenerationHooks &hooks) {
    return hooks.forced_tokens.empty() ? params.max_new_tokens
                                       : std::min(params.max_new_tokens, int(hooks.forced_tokens.size()));
}

} // namespace

int step_limit(const HParams &hp, const std::vector<int32_t> &text_tokens, const SamplingParams &params) {
    return speech_guards(hp, text_tokens, params, params.max_new_tokens).step_limit();
}

Generation::Generation(const T3Model &model, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens,
                       const SamplingParams &params, const GenerationHooks &hooks)
    : model_(model), recipe_(model.hparams().sampler), params_(validated(model.hparams(), text_tokens, params)),
      hooks_(hooks), cond_(cond), text_tokens_(text_tokens),
      guards_(speech_guards(model.hparams(), text_tokens, params, step_cap(params, hooks))),
      rng_(hooks.generator ? *hooks.generator : TorchGenerator(params.seed)) {
    const HParams &hp = model.hparams();
    for (size_t i = 0; i < hooks.forced_tokens.size(); ++i)
        if (hooks.forced_tokens[i] < 0 || hooks.forced_tokens[i] >= hp.speech_vocab)
            fail("T3 forced token ", i, " = ", hooks.forced_tokens[i], " is outside the speech vocabulary [0, ",
                 hp.speech_vocab, ")");
    use_cfg_ = recipe_.guidance && params.cfg_weight > 0;
    n_rows_ = use_cfg_ ? 2 : 1;
    length_ = t3::prefill_length(hp, cond, text_tokens);
    // The text's key positions: the prefill ends with it and then the BOS tokens.
    text_end_ = length_ - hp.bos_tokens;
    const int text_begin = text_end_ - int(text_tokens.size());
    // The cache is reserved for the request's max_new_tokens, not the bound: pieces of one request
    // then share one cache and its graphs, however their bounds differ.
    reserved_steps_ = step_cap(params, hooks);
    max_steps_ = guards_.step_limit();
    if (params.guards.alignment) {
        if (hp.guards.aligned_heads.empty())
            fail("the ", variant_name(hp.variant), " T3 has no alignment analyzer (no aligned attention heads)");
        analyzer_.emplace(text_begin, text_end_, hp.stop_speech_token);
    }
    // The tokens of steps 0 .. max_steps - 2 go in at positions length, length + 1, ...
    if (hp.max_sequence() > 0 && length_ + reserved_steps_ - 1 > hp.max_sequence())
        fail("T3 request of ", length_, " prefill positions + ", reserved_steps_, " new tokens exceeds the ",
             hp.max_sequence(), " positions of the model");
    history_ = {hp.start_speech_token};  // HF's generated_ids start with the BOS
    last_token_ = hp.start_speech_token; // the analyzer's generated_ids[0, -1]
    result_.step_limit = max_steps_;
    result_.bound_by_text = guards_.bound_by_text();
}

const std::vector<AttentionHead> &Generation::watched_heads() const {
    static const std::vector<AttentionHead> none;
    return analyzer_ ? model_.hparams().guards.aligned_heads : none;
}

std::vector<float> Generation::prefill_embeddings() const {
    return t3::prefill_embeddings(model_, cond_, text_tokens_, n_rows_);
}

std::vector<float> Generation::next_embedding() const {
    return speech_token_embedding(model_, result_.tokens.back(), steps_taken());
}

bool Generation::step(const std::vector<float> &raw, const T3Session::AttentionRows *attention) {
    const HParams &hp = model_.hparams();
    const size_t vocab = size_t(hp.speech_vocab);
    const int step = steps_taken();
    if (step >= max_steps_) fail("T3 generation: step ", step, " after the last of ", max_steps_);
    if (raw.size() != size_t(n_rows_) * vocab)
        fail("T3 generation: ", raw.size(), " logits, expected ", n_rows_, " x ", vocab);
    const bool teacher_forced = !hooks_.forced_tokens.empty();
    std::vector<float> cfg = use_cfg_ ? cfg_combine(raw.data(), raw.data() + vocab, vocab, params_.cfg_weight)
                                      : std::vector<float>(raw.begin(), raw.begin() + std::ptrdiff_t(vocab));
    bool eos_forced = false;
    if (analyzer_) { // step 0: the prefill's rows after the text (the BOS rows); later the new row
        if (!attention || attention->values.empty()) fail("T3 generation: the alignment analyzer got no attention");
        const int first_row = step == 0 ? text_end_ : 0, n_rows_seen = step == 0 ? length_ - text_end_ : 1;
        eos_forced = analyzer_->step(attention->row(first_row), n_rows_seen, attention->row_length, last_token_, cfg);
    }
    std::vector<float> processed = cfg, penalized;
    int32_t token;
    if (teacher_forced) {
        process_logits(processed, recipe_, history_, params_, &penalized);
        token = hooks_.forced_tokens[size_t(step)];
    } else {
        token = choose_token(processed, recipe_, history_, params_, rng_, &penalized);
        if (token == hp.stop_speech_token && params_.ignore_eos) {
            if (result_.eos_step < 0) result_.eos_step = step;
            std::vector<float> work = cfg;
            work[size_t(hp.stop_speech_token)] = -INFINITY; // a second draw, among the other tokens
            token = choose_token(work, recipe_, history_, params_, rng_);
        }
    }
    result_.tokens.push_back(token);
    if (step == 0 && !recipe_.history_keeps_bos) history_.clear();
    history_.push_back(token);
    const bool go_on = !hooks_.on_step || hooks_.on_step(StepRecord{step, &raw, &cfg, &penalized, &processed, token});
    last_token_ = token;
    if (token == hp.stop_speech_token) {
        result_.eos_step = step;
        result_.end = eos_forced ? PieceEnd::alignment : PieceEnd::eos;
        return false;
    }
    const std::optional<PieceEnd> stop =
        guards_.after_token(token, analyzer_ ? std::optional<bool>(analyzer_->complete()) : std::nullopt);
    if (stop) {
        result_.end = *stop;
        return false;
    }
    if (!go_on) {
        result_.end = PieceEnd::stopped;
        return false;
    }
    if (step + 1 == max_steps_) {
        result_.end = guards_.bound_by_text()                                            ? PieceEnd::length_bound
                      : teacher_forced && max_steps_ == int(hooks_.forced_tokens.size()) ? PieceEnd::stopped
                                                                                         : PieceEnd::max_tokens;
        return false;
    }
    return true;
}

GenerationResult Generation::result() const {
    GenerationResult result = result_;
    result.generator = rng_;
    return result;
}

GenerationResult generate(T3Session &session, const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens,
                          const SamplingParams &params, const GenerationHooks &hooks, const KvPrefix *prefix) {
    Generation generation(session.model(), cond, text_tokens, params, hooks);
    session.watch_heads(generation.watched_heads());
    // Step i feeds its token for step i + 1: at most reserved_steps - 1 tokens follow the prefill in the cache.
    std::vector<float> raw =
        session.prefill(generation.prefill_embeddings(), generation.n_rows(), generation.prefill_length(),
                        generation.reserved_steps() - 1, generation.watched_heads().empty() ? prefix : nullptr);
    while (generation.step(raw, &session.watched_attention())) raw = session.decode(generation.next_embedding());
    return generation.result();
}

GenerationResult generate(T3Session &session, const Conditioning &cond, const std::vector<int32_t> &text_tokens,
                          const SamplingParams &params, const GenerationHooks &hooks) {
    params.validate(session.model().hparams().max_new_tokens_limit());
    validate_text_tokens(session.model().hparams(), text_tokens);
    return generate(session, encode_conditioning(session.model(), session.backend(), cond), text_tokens, params, hooks);
}

SpeechTokenFilter::Verdict SpeechTokenFilter::push(int32_t token) {
    if (token == start_ && !started_) {
        started_ = true; // after an end too: the span is then empty, as tts.py's x[s:e] with s > e
        return Verdict::restart;
    }
    if (ended_) return Verdict::end;
    if (token == stop_) {
        ended_ = true;
        return Verdict::end;
    }
    return token < limit_ ? Verdict::speak : Verdict::skip;
}

std::vector<int32_t> drop_invalid_tokens(const std::vector<int32_t> &tokens, const HParams &hp) {
    SpeechTokenFilter filter(hp);
    std::vector<int32_t> kept;
    for (int32_t token : tokens) switch (filter.push(token)) {
        case SpeechTokenFilter::Verdict::speak:
            kept.push_back(token);
            break;
        case SpeechTokenFilter::Verdict::restart:
            kept.clear();
            break;
        case SpeechTokenFilter::Verdict::skip:
        case SpeechTokenFilter::Verdict::end:
            break;
        }
    return kept;
}

} // namespace chatterbox::t3
