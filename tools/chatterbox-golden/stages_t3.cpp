// Golden stages of the text front end and T3: text tokens, conditioning embeddings, the
// teacher-forced logits and the greedy decode of index.json.

#include "stages.h"

#include "core/error.h"
#include "models/chatterbox/session.h"
#include "models/chatterbox/t3/cond_encoder.h"
#include "models/chatterbox/t3/generate.h"
#include "text/bpe_tokenizer.h"
#include "text/punc_norm.h"

#include <memory>

namespace chatterbox::golden {

namespace {

std::vector<int32_t> as_i32(const std::vector<int64_t> &values) { return {values.begin(), values.end()}; }
std::vector<int64_t> as_i64(const std::vector<int32_t> &values) { return {values.begin(), values.end()}; }

std::vector<int32_t> text_ids(const GoldenRun &run) {
    const auto tokenizer = text::EnTokenizer::from_file(run.input_path(run.golden_case().tokenizer));
    return tokenizer.text_to_tokens(text::punc_norm(run.golden_case().text));
}

// The T3 model and one exact-path session (plain attention, f32 KV cache), loaded on first use.
struct T3Context {
    Engine engine;
    Session session;
    const t3::Model &model;
    t3::CondEmbeddings cond;
    std::vector<int32_t> framed_text;

    explicit T3Context(GoldenRun &run)
        : engine({run.model_path(), BackendOptions{"cpu", run.threads()}, components(Component::t3)}),
          session(engine, exact_session()), model(engine.t3()) {
        // The speaker embedding and prompt tokens the voice stage computed.
        t3::Conditioning voice;
        voice.speaker_emb = run.computed("ve_speaker_emb").f32();
        voice.prompt_tokens = as_i32(run.computed("t3_cond_prompt_tokens").i64());
        voice.exaggeration = run.golden_case().exaggeration;
        cond = t3::encode_conditioning(model, session.backend(), voice);
        const auto &hp = model.hparams();
        framed_text = text::t3_text_tokens(text_ids(run), hp.start_text_token, hp.stop_text_token);
    }

    static SessionOptions exact_session() {
        SessionOptions options;
        options.t3.attention = nn::AttentionPath::plain;
        options.t3.kv_type = GGML_TYPE_F32;
        return options;
    }

    t3::SamplingParams greedy(const GoldenCase &c, int max_new_tokens) const {
        t3::SamplingParams params;
        params.greedy = true;
        params.cfg_weight = c.cfg_weight;
        params.max_new_tokens = max_new_tokens;
        params.seed = c.seed;
        return params;
    }
};

T3Context &t3_context(GoldenRun &run) {
    return run.shared<T3Context>("t3", [&] { return std::make_unique<T3Context>(run); });
}

void run_text(GoldenRun &run) {
    const std::vector<int32_t> ids = text_ids(run);
    run.write("text_tokens", NpyArray::from_i32({int64_t(ids.size())}, ids));
    const std::vector<int32_t> framed = text::t3_text_tokens(ids);
    const int rows = run.golden_case().cfg_weight > 0 ? 2 : 1;
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

void run_teacher_forced(GoldenRun &run) {
    T3Context &t3 = t3_context(run);
    const GoldenCase &c = run.golden_case();
    std::vector<int32_t> forced = as_i32(run.input("t3_tf_tokens").i64());
    if (int(forced.size()) < c.n_teacher_forced)
        fail("t3_tf_tokens has ", forced.size(), " tokens, the case asks for ", c.n_teacher_forced);
    forced.resize(size_t(c.n_teacher_forced));
    const Recorded rec = generate_recorded(t3, t3.greedy(c, c.n_teacher_forced), forced);
    const int64_t steps = int64_t(rec.result.tokens.size());
    const int64_t vocab = t3.model.hparams().speech_vocab;
    const int64_t rows = int64_t(rec.raw.size()) / (steps * vocab);
    run.write("t3_tf_logits_raw", NpyArray::from_f32({steps, rows, vocab}, rec.raw));
    run.write("t3_tf_logits_cfg", NpyArray::from_f32({steps, vocab}, rec.cfg));
    run.write("t3_tf_logits_penalized", NpyArray::from_f32({steps, vocab}, rec.penalized));
}

void run_greedy(GoldenRun &run) {
    T3Context &t3 = t3_context(run);
    const GoldenCase &c = run.golden_case();
    const Recorded rec = generate_recorded(t3, t3.greedy(c, c.n_greedy), {});
    const int64_t steps = int64_t(rec.result.tokens.size());
    const int64_t vocab = t3.model.hparams().speech_vocab;
    run.write("t3_greedy_tokens", NpyArray::from_i64({steps}, as_i64(rec.result.tokens)));
    run.write("t3_greedy_logits_penalized", NpyArray::from_f32({steps, vocab}, rec.penalized));
}

} // namespace

void add_t3_stages(std::vector<Stage> &stages) {
    stages.push_back({"text", {"text_tokens", "t3_text_tokens"}, run_text});
    stages.push_back({"t3_cond", {"t3_cond_emb"}, run_cond});
    stages.push_back(
        {"t3_teacher_forced", {"t3_tf_logits_raw", "t3_tf_logits_cfg", "t3_tf_logits_penalized"}, run_teacher_forced});
    stages.push_back({"t3_greedy", {"t3_greedy_tokens", "t3_greedy_logits_penalized"}, run_greedy});
}

} // namespace chatterbox::golden
