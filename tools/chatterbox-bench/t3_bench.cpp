#include "t3_bench.h"

#include "core/error.h"
#include "core/weight_store.h"
#include "models/chatterbox/t3/embeddings.h"
#include "models/chatterbox/t3/generate.h"
#include "timing.h"

#include <filesystem>
#include <random>

namespace chatterbox::bench {

namespace {

// Bytes a decode step reads: every backbone matrix and norm, the speech head, and the keys and
// values of the positions attended to (flash attention skips the masked rest of the cache).
size_t decode_step_bytes(const t3::Model &model, int n_rows, double mean_positions, ggml_type kv_type) {
    size_t bytes = ggml_nbytes(model.final_norm()) + ggml_nbytes(model.speech_head());
    for (const t3::LayerWeights &l : model.layers())
        for (const ggml_tensor *t : {l.attn_norm, l.wq, l.wk, l.wv, l.wo, l.ffn_norm, l.w_gate, l.w_up, l.w_down})
            bytes += ggml_nbytes(t);
    const t3::HParams &hp = model.hparams();
    bytes += size_t(2.0 * hp.n_layers * n_rows * mean_positions * hp.hidden * double(ggml_type_size(kv_type)));
    return bytes;
}

} // namespace

nlohmann::json run_t3_bench(Backend &backend, const T3BenchOptions &options) {
    if (options.text_tokens < 1 || options.prompt_tokens < 0 || options.decode_tokens < 2)
        fail("t3 bench: need at least 1 text token, 0 prompt tokens and 2 decode tokens");
    WeightStore store;
    if (std::filesystem::is_directory(options.weights))
        store.add_safetensors((std::filesystem::path(options.weights) / "t3_cfg.safetensors").string(), "t3.");
    else
        store.add_gguf(options.weights);
    auto start = Clock::now();
    const t3::Model model(store, backend, t3::HParams::from_checkpoint(store, "t3.", Variant::english));
    const double load_ms = ms_since(start);
    const t3::HParams &hp = model.hparams();

    // Inputs with the shapes of a real request; their values do not change the cost.
    std::mt19937_64 rng(1234);
    std::uniform_real_distribution<float> unit(-0.1f, 0.1f);
    t3::Conditioning cond;
    for (int i = 0; i < hp.speaker_embed; ++i) cond.speaker_emb.push_back(unit(rng));
    std::uniform_int_distribution<int32_t> speech_unit(0, hp.speech_token_limit - 1);
    for (int i = 0; i < options.prompt_tokens; ++i) cond.prompt_tokens.push_back(speech_unit(rng));
    start = Clock::now();
    const t3::CondEmbeddings cond_emb = t3::encode_conditioning(model, cond);
    const double conditioning_ms = ms_since(start);

    std::uniform_int_distribution<int32_t> text_id(1, hp.start_text_token - 1);
    std::vector<int32_t> text{hp.start_text_token};
    for (int i = 0; i < options.text_tokens; ++i) text.push_back(text_id(rng));
    text.push_back(hp.stop_text_token);
    t3::GenerationHooks hooks;
    for (int i = 0; i <= options.decode_tokens; ++i) hooks.forced_tokens.push_back(speech_unit(rng));

    t3::RuntimeOptions runtime;
    runtime.attention = options.plain_attention ? t3::AttentionKind::Plain : t3::AttentionKind::Flash;
    runtime.kv_type = options.f32_cache ? GGML_TYPE_F32 : GGML_TYPE_F16;
    t3::Session session(model, runtime);
    t3::SamplingParams params;
    params.cfg_weight = options.cfg_weight;
    params.max_new_tokens = int(hooks.forced_tokens.size());

    // Warm-up with the same request, stopped after two steps: builds the graphs and the cache.
    int warm_steps = 0;
    hooks.on_step = [&](const t3::StepRecord &) { return ++warm_steps < 2; };
    t3::generate(session, cond_emb, text, params, hooks);

    std::vector<Clock::time_point> step_times;
    hooks.on_step = [&](const t3::StepRecord &) {
        step_times.push_back(Clock::now());
        return true;
    };
    start = Clock::now();
    t3::generate(session, cond_emb, text, params, hooks);
    const double prefill_ms = ms_between(start, step_times.front());
    std::vector<double> decode_ms;
    for (size_t i = 1; i < step_times.size(); ++i) decode_ms.push_back(ms_between(step_times[i - 1], step_times[i]));
    const Spread decode = spread_of(decode_ms);

    const int prefill_tokens = t3::prefill_length(cond_emb, text);
    const int n_rows = options.cfg_weight > 0 ? 2 : 1;
    const size_t step_bytes =
        decode_step_bytes(model, n_rows, prefill_tokens + double(decode_ms.size()) / 2, runtime.kv_type);
    nlohmann::json out{{"weights", options.weights},
                       {"matrix_type", ggml_type_name(model.matmul_type())},
                       {"backend", backend.description()},
                       {"attention", options.plain_attention ? "plain" : "flash"},
                       {"kv_type", ggml_type_name(runtime.kv_type)},
                       {"cfg_rows", n_rows},
                       {"load_ms", load_ms},
                       {"conditioning_ms", conditioning_ms},
                       {"prefill_tokens", prefill_tokens},
                       {"prefill_ms", prefill_ms},
                       {"decode_tokens", decode_ms.size()},
                       {"decode_ms_per_token", decode.mean},
                       {"decode_ms_median", decode.median},
                       {"step_bytes", step_bytes}};
    if (options.bandwidth_gb_per_s > 0) {
        const double bound_ms = double(step_bytes) / (options.bandwidth_gb_per_s * 1e9) * 1e3;
        out["bound_ms"] = bound_ms;
        out["ratio_to_bound"] = decode.mean / bound_ms;
    }
    return out;
}

} // namespace chatterbox::bench
