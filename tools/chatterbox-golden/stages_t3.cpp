// Golden stages of the text front end and T3: text tokens, conditioning embeddings, the
// teacher-forced logits and the greedy decode of index.json, for the case's variant (its text
// front end, guidance rows and logits processors). Every logit stage is written; a golden set
// records those its official run exposes.

#include "stages.h"

#include "core/error.h"
#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/t3/cond_encoder.h"
#include "models/chatterbox/t3/generate.h"
#include "models/chatterbox/text_frontend.h"
#include "models/chatterbox/variant_spec.h"
#include "text/bpe_tokenizer.h"
#include "text/punc_norm.h"

#include <memory>

namespace chatterbox::golden {

namespace {

std::vector<int32_t> as_i32(const std::vector<int64_t> &values) { return {values.begin(), values.end()}; }
std::vector<int64_t> as_i64(const std::vector<int32_t> &values) { return {values.begin(), values.end()}; }

// The case's tokenizer behind the variant's text front end, made on first use.
const TextFrontEnd &front_end(GoldenRun &run) {
    return run.shared<TextFrontEnd>("text", [&] {
        const std::string path = run.input_path(run.golden_case().tokenizer);
        // Chinese text needs the multilingual model's Cangjie table, when the inputs have one.
        return std::make_unique<TextFrontEnd>(text::BpeTokenizer::json_document(path), path,
                                              ModelHparams::for_variant(run.golden_case().variant).t3,
                                              folder_cangjie_json(run.input_path("")));
    });
}

// The rows T3 runs: the conditional one, and the unconditional one when the variant guides.
int guidance_rows(const GoldenCase &c) {
    return variant_spec(c.variant).t3.sampler.guidance && c.params.sampling.cfg_weight > 0 ? 2 : 1;
}

// The T3 model and one exact-path session (plain attention, f32 KV cache), loaded on first use.
struct T3Context {
    std::unique_ptr<PipelineModel> engine;
    PipelineSession session;
    const t3::T3Model &model;
    t3::CondEmbeddings cond;
    std::vector<int32_t> framed_text;

    explicit T3Context(GoldenRun &run)
        : engine(load_engine(run, components(Component::t3))), session(*engine, exact_session()), model(engine->t3()) {
        // The speaker embedding and prompt tokens the voice stage computed.
        t3::Conditioning voice;
        voice.speaker_emb = run.computed("ve_speaker_emb").f32();
        voice.prompt_tokens = as_i32(run.computed("t3_cond_prompt_tokens").i64());
        voice.exaggeration = run.golden_case().params.exaggeration;
        cond = t3::encode_conditioning(model, session.backend(), voice);
        framed_text = front_end(run).t3_tokens(run.golden_case().text, run.golden_case().params.language);
    }

    static PipelineSessionOptions exact_session() {
        PipelineSessionOptions options;
        options.t3.attention = nn::AttentionPath::plain;
        options.t3.kv_type = GGML_TYPE_F32;
        return options;
    }

    // The case's sampling parameters for n steps; greedy takes the argmax of the processed logits.
    static t3::SamplingParams sampling(const GoldenCase &c, int steps, bool greedy) {
        t3::SamplingParams params = c.params.sampling;
        params.greedy = greedy;
        params.max_new_tokens = steps;
        params.seed = c.seed;
        return params;
    }
};

T3Context &t3_context(GoldenRun &run) {
    return run.shared<T3Context>("t3", [&] { return std::make_unique<T3Context>(run); });
}

void run_text(GoldenRun &run) {
    const TextFrontEnd &text = front_end(run);
    const GoldenCase &c = run.golden_case();
    const std::vector<int32_t> ids = text.tokens(text::punc_norm(c.text, text.punctuation()), c.params.language);
    run.write("text_tokens", NpyArray::from_i32({int64_t(ids.size())}, ids));
    const std::vector<int32_t> framed = text.t3_tokens(c.text, c.params.language);
    const int rows = guidance_rows(run.golden_case());
    std::vector<int64_t> batch;
    for (int r = 0; r < rows; ++r) batch.insert(batch.end(), framed.begin(), framed.end());
    run.write("t3_text_tokens", NpyArray::from_i64({rows, int64_t(framed.size())}, batch));
}

void run_cond(GoldenRun &run) {
    const T3Context &t3 = t3_context(run);
    const int hidden = t3.model.hparams().hidden;
    run.write("t3_cond_emb", NpyArray::from_f32({1, t3.cond.length, hidden}, t3.cond.values));
}

// Steps with every logit stage recorded.
struct Recorded : t3::LogitsLog {
    t3::GenerationResult result;
    int64_t steps() const { return int64_t(result.tokens.size()); }
};

Recorded generate_recorded(T3Context &t3, const t3::SamplingParams &params, const std::vector<int32_t> &forced) {
    Recorded rec;
    t3::GenerationHooks hooks;
    hooks.forced_tokens = forced;
    hooks.on_step = [&](const t3::StepRecord &s) {
        rec.append(s);
        return true;
    };
    rec.result = t3::generate(t3.session.t3(), t3.cond, t3.framed_text, params, hooks);
    return rec;
}

// The backbone's logits: (steps, rows, vocab) with the CFG rows, (steps, vocab) with one.
NpyArray raw_logits(const Recorded &rec, int64_t vocab) {
    const int64_t rows = int64_t(rec.raw.size()) / (rec.steps() * vocab);
    return rows > 1 ? NpyArray::from_f32({rec.steps(), rows, vocab}, rec.raw)
                    : NpyArray::from_f32({rec.steps(), vocab}, rec.raw);
}

void run_teacher_forced(GoldenRun &run) {
    T3Context &t3 = t3_context(run);
    const GoldenCase &c = run.golden_case();
    std::vector<int32_t> forced = as_i32(run.input("t3_tf_tokens").i64());
    if (int(forced.size()) < c.n_teacher_forced)
        fail("t3_tf_tokens has ", forced.size(), " tokens, the case asks for ", c.n_teacher_forced);
    forced.resize(size_t(c.n_teacher_forced));
    // Sampling parameters, not greedy: the processed logits are what a draw would see.
    const Recorded rec = generate_recorded(t3, T3Context::sampling(c, c.n_teacher_forced, false), forced);
    const int64_t steps = rec.steps(), vocab = t3.model.hparams().speech_vocab;
    run.write("t3_tf_logits_raw", raw_logits(rec, vocab));
    if (guidance_rows(c) > 1) run.write("t3_tf_logits_cfg", NpyArray::from_f32({steps, vocab}, rec.cfg));
    run.write("t3_tf_logits_penalized", NpyArray::from_f32({steps, vocab}, rec.penalized));
    run.write("t3_tf_logits_processed", NpyArray::from_f32({steps, vocab}, rec.processed));
}

void run_greedy(GoldenRun &run) {
    T3Context &t3 = t3_context(run);
    const GoldenCase &c = run.golden_case();
    const Recorded rec = generate_recorded(t3, T3Context::sampling(c, c.n_greedy, true), {});
    const int64_t steps = rec.steps(), vocab = t3.model.hparams().speech_vocab;
    run.write("t3_greedy_tokens", NpyArray::from_i64({steps}, as_i64(rec.result.tokens)));
    run.write("t3_greedy_logits_raw", raw_logits(rec, vocab));
    run.write("t3_greedy_logits_penalized", NpyArray::from_f32({steps, vocab}, rec.penalized));
}

} // namespace

void add_t3_stages(std::vector<Stage> &stages) {
    stages.push_back({"text", {"text_tokens", "t3_text_tokens"}, run_text});
    stages.push_back({"t3_cond", {"t3_cond_emb"}, run_cond});
    stages.push_back({"t3_teacher_forced",
                      {"t3_tf_logits_raw", "t3_tf_logits_cfg", "t3_tf_logits_penalized", "t3_tf_logits_processed"},
                      run_teacher_forced});
    stages.push_back(
        {"t3_greedy", {"t3_greedy_tokens", "t3_greedy_logits_raw", "t3_greedy_logits_penalized"}, run_greedy});
}

} // namespace chatterbox::golden
