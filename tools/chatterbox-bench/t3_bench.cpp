#include "t3_bench.h"

#include "core/error.h"
#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/t3/embeddings.h"
#include "models/chatterbox/t3/generate.h"
#include "models/chatterbox/t3/prefix_cache.h"
#include "request_inputs.h"
#include "timing.h"

#include <random>

namespace chatterbox::bench {

size_t decode_step_bytes(const t3::T3Model &model, int n_rows, double mean_positions, ggml_type kv_type) {
    size_t bytes = 0;
    for (const ggml_tensor *t : model.step_tensors()) bytes += ggml_nbytes(t);
    const t3::HParams &hp = model.hparams();
    bytes += size_t(2.0 * hp.n_layers * n_rows * mean_positions * hp.hidden * double(ggml_type_size(kv_type)));
    return bytes;
}

nlohmann::json run_t3_bench(const BackendOptions &backend, const T3BenchArguments &options) {
    if (options.text_tokens < 1 || options.prompt_tokens < 0 || options.decode_tokens < 2)
        fail("t3 bench: need at least 1 text token, 0 prompt tokens and 2 decode tokens");
    const int steps = options.decode_tokens + 1; // the first token comes from the prefill
    const int max_new_tokens = options.max_new_tokens > 0 ? options.max_new_tokens : steps;
    if (max_new_tokens < steps)
        fail("t3 bench: max_new_tokens ", max_new_tokens, " leaves no room for ", options.decode_tokens,
             " decode steps");
    auto start = Clock::now();
    const PipelineModel engine({options.weights, backend, components(Component::t3)});
    const double load_ms = ms_since(start);
    const t3::T3Model &model = engine.t3();
    const t3::HParams &hp = model.hparams();
    PipelineSessionOptions session_options;
    session_options.t3.attention = options.plain_attention ? nn::AttentionPath::plain : nn::AttentionPath::flash;
    session_options.t3.kv_type = options.f32_cache ? GGML_TYPE_F32 : GGML_TYPE_F16;
    session_options.t3.decode_bucket = options.decode_bucket;
    PipelineSession session(engine, session_options);

    std::mt19937_64 rng(1234);
    const RequestInputs inputs = request_inputs(hp, options.prompt_tokens, options.text_tokens, rng);
    const std::vector<int32_t> &text = inputs.text;
    start = Clock::now();
    const t3::CondEmbeddings cond_emb = t3::encode_conditioning(model, session.backend(), inputs.voice);
    const double conditioning_ms = ms_since(start);
    std::uniform_int_distribution<int32_t> speech_unit(0, hp.speech_token_limit - 1);
    t3::GenerationHooks hooks;
    for (int i = 0; i < max_new_tokens; ++i) hooks.forced_tokens.push_back(speech_unit(rng));

    t3::SamplingParams params;
    params.cfg_weight = options.cfg_weight;
    params.max_new_tokens = max_new_tokens;

    // Warm-up with the same request, stopped after two steps: builds the cache and the first graphs.
    int warm_steps = 0;
    hooks.on_step = [&](const t3::StepRecord &) { return ++warm_steps < 2; };
    t3::generate(session.t3(), cond_emb, text, params, hooks);

    // A timed request stops after `steps` tokens, however much room max_new_tokens reserved.
    struct Timed {
        double prefill_ms = 0, decode_cpu_ms_per_token = 0;
        std::vector<double> decode_ms; // per step after the first
    };
    const auto timed_request = [&](const t3::SamplingParams &request) {
        std::vector<Clock::time_point> step_times;
        double first_step_cpu_ms = 0;
        hooks.on_step = [&](const t3::StepRecord &) {
            step_times.push_back(Clock::now());
            if (step_times.size() == 1) first_step_cpu_ms = process_cpu_ms();
            return int(step_times.size()) < steps;
        };
        const Clock::time_point begin = Clock::now();
        t3::generate(session.t3(), cond_emb, text, request, hooks);
        Timed timed;
        timed.prefill_ms = ms_between(begin, step_times.front());
        for (size_t i = 1; i < step_times.size(); ++i)
            timed.decode_ms.push_back(ms_between(step_times[i - 1], step_times[i]));
        timed.decode_cpu_ms_per_token = (process_cpu_ms() - first_step_cpu_ms) / double(timed.decode_ms.size());
        return timed;
    };
    const Timed main_run = timed_request(params);
    const double prefill_ms = main_run.prefill_ms;
    const std::vector<double> &decode_ms = main_run.decode_ms;
    const Spread decode = spread_of(decode_ms);

    // The same prefill with the voice's conditioning prefix kept (t3/prefix_cache.h): only the
    // text and BOS positions are computed.
    t3::PrefixCache prefixes(1);
    const std::shared_ptr<const t3::KvPrefix> prefix = prefixes.get(session.t3(), cond_emb);
    hooks.on_step = [](const t3::StepRecord &) { return false; };
    t3::generate(session.t3(), cond_emb, text, params, hooks, prefix.get()); // builds its graph
    start = Clock::now();
    t3::generate(session.t3(), cond_emb, text, params, hooks, prefix.get());
    const double prefixed_prefill_ms = ms_since(start);

    const int prefill_tokens = t3::prefill_length(hp, cond_emb, text);
    const int n_rows = options.cfg_weight > 0 ? 2 : 1;
    const size_t step_bytes =
        decode_step_bytes(model, n_rows, prefill_tokens + double(decode_ms.size()) / 2, session_options.t3.kv_type);
    nlohmann::json out{{"weights", options.weights},
                       {"matrix_type", ggml_type_name(model.matmul_type())},
                       {"backend", session.backend().description()},
                       {"attention", options.plain_attention ? "plain" : "flash"},
                       {"kv_type", ggml_type_name(session_options.t3.kv_type)},
                       {"cfg_rows", n_rows},
                       {"decode_bucket", options.decode_bucket},
                       {"cache_capacity", session.t3().capacity()},
                       {"load_ms", load_ms},
                       {"conditioning_ms", conditioning_ms},
                       {"prefill_tokens", prefill_tokens},
                       {"prefill_ms", prefill_ms},
                       {"prefix_positions", prefix->length},
                       {"prefill_with_voice_prefix_ms", prefixed_prefill_ms},
                       {"decode_tokens", decode_ms.size()},
                       {"decode_ms_per_token", decode.mean},
                       {"decode_ms_median", decode.median},
                       {"decode_cpu_ms_per_token", main_run.decode_cpu_ms_per_token},
                       {"graphs_built", session.t3().graphs_built()},
                       {"step_bytes", step_bytes}};
    if (options.alignment_rounds > 0) {
        // The alignment analyzer's cost: requests without and with it, interleaved on one session
        // (each request's own first graphs are built by a warm-up of each kind first).
        t3::SamplingParams analyzed = params;
        analyzed.guards.alignment = true;
        hooks.on_step = [&](const t3::StepRecord &) { return false; };
        t3::generate(session.t3(), cond_emb, text, analyzed, hooks);
        nlohmann::json plain_ms = nlohmann::json::array(), analyzed_ms = nlohmann::json::array();
        nlohmann::json plain_cpu = nlohmann::json::array(), analyzed_cpu = nlohmann::json::array();
        double plain_sum = 0, analyzed_sum = 0;
        for (int round = 0; round < options.alignment_rounds; ++round) {
            for (const bool with : {false, true}) {
                const Timed t = timed_request(with ? analyzed : params);
                const double mean = spread_of(t.decode_ms).mean;
                (with ? analyzed_ms : plain_ms).push_back(mean);
                (with ? analyzed_cpu : plain_cpu).push_back(t.decode_cpu_ms_per_token);
                (with ? analyzed_sum : plain_sum) += mean;
            }
        }
        out["alignment_compare"] = {{"rounds", options.alignment_rounds},         {"plain_ms_per_token", plain_ms},
                                    {"alignment_ms_per_token", analyzed_ms},      {"plain_cpu_ms_per_token", plain_cpu},
                                    {"alignment_cpu_ms_per_token", analyzed_cpu}, {"ratio", analyzed_sum / plain_sum}};
    }
    if (options.bandwidth_gb_per_s > 0) {
        const double bound_ms = double(step_bytes) / (options.bandwidth_gb_per_s * 1e9) * 1e3;
        out["bound_ms"] = bound_ms;
        out["ratio_to_bound"] = decode.mean / bound_ms;
    }
    return out;
}

} // namespace chatterbox::bench
