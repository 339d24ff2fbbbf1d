#include "s3gen_bench.h"

#include "core/error.h"
#include "graph_flops.h"
#include "models/chatterbox/pipeline_session.h"
#include "timing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace chatterbox::bench {

namespace {

// Matrix-product and attention FLOPs of one estimator evaluation (both CFG rows).
struct EstimatorFlops {
    double matmul = 0;    // linear layers and convolutions (im2col columns times the weight)
    double attention = 0; // Q·Kᵀ and P·V inside flash attention
    int nodes = 0;        // graph nodes: each is a barrier for the CPU threads
};

// Counts from the shapes of the graph the engine itself builds (a metadata-only context, graph_flops.h);
// attention is counted on the flash path whatever path runs (the same FLOPs).
EstimatorFlops count_estimator_flops(const s3gen::Estimator &estimator, const s3gen::FlowHParams &hp, int64_t frames) {
    const size_t max_nodes = 16384;
    ggml_init_params params{ggml_tensor_overhead() * max_nodes + ggml_graph_overhead_custom(max_nodes, false), nullptr,
                            /*no_alloc=*/true};
    ggml_context *ctx = ggml_init(params);
    if (!ctx) fail("s3gen bench: cannot create a ggml context to count FLOPs");
    const int64_t rows = hp.cfg_rows(); // the CFG pair, or the conditional row alone (mean flow)
    ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, hp.mel_bins, frames, rows);
    ggml_tensor *cond = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, hp.conditioning_channels(), frames, rows);
    ggml_tensor *sinusoid = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, hp.time_sinusoid_dim(), hp.time_points());
    ggml_cgraph *graph = ggml_new_graph_custom(ctx, max_nodes, false);
    ggml_build_forward_expand(graph, estimator(ctx, x, cond, sinusoid, nn::AttentionPath::flash));
    const NodeFlops counted = graph_flops(graph);
    EstimatorFlops flops;
    flops.nodes = ggml_graph_n_nodes(graph);
    flops.matmul = counted.matmul;
    flops.attention = counted.attention;
    ggml_free(ctx);
    return flops;
}

// The kernel that took most of the flow's weights: the one its run is named by.
std::string main_kernel(const std::map<std::string, int> &weights_per_kernel) {
    const auto most = std::max_element(weights_per_kernel.begin(), weights_per_kernel.end(),
                                       [](const auto &a, const auto &b) { return a.second < b.second; });
    return most == weights_per_kernel.end() ? "none" : most->first;
}

// Inputs with the shapes of a real request (a 10 s voice prompt by default). Their values do not
// change the cost; they are drawn from one seed so every weight type sees the same request.
struct Request {
    std::vector<int32_t> tokens;
    s3gen::FlowReference reference;
    std::vector<float> noise; // (80, frames)
};

Request make_request(const S3GenBenchArguments &options, const s3gen::FlowHParams &hp) {
    if (options.prompt_tokens < 1 || options.generated_tokens < 1 || options.repeats < 1)
        fail("s3gen bench: need at least 1 prompt token, 1 generated token and 1 repeat");
    std::mt19937_64 rng(options.seed);
    std::uniform_int_distribution<int32_t> token(0, int32_t(hp.vocab) - 1);
    Request r;
    for (int i = 0; i < options.generated_tokens; ++i) r.tokens.push_back(token(rng));
    for (int i = 0; i < options.prompt_tokens; ++i) r.reference.prompt_tokens.push_back(token(rng));
    // A log-mel-like prompt: values around -6 with spread 2, like quiet-to-loud speech.
    const std::vector<float> unit = s3gen::standard_normal(size_t(2 * options.prompt_tokens * hp.mel_bins), rng);
    for (float v : unit) r.reference.prompt_mel.push_back(-6.0f + 2.0f * v);
    r.reference.xvector = s3gen::standard_normal(size_t(hp.speaker_dim), rng);
    const int64_t frames = int64_t(options.prompt_tokens + options.generated_tokens) * hp.token_mel_ratio;
    r.noise = s3gen::standard_normal(size_t(hp.mel_bins * frames), rng);
    return r;
}

double max_abs_diff(const std::vector<float> &a, const std::vector<float> &b) {
    if (a.size() != b.size())
        fail("s3gen bench: outputs of ", a.size(), " and ", b.size(), " values cannot be compared");
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
    return worst;
}

double rms_diff(const std::vector<float> &a, const std::vector<float> &b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += double(a[i] - b[i]) * double(a[i] - b[i]);
    return a.empty() ? 0.0 : std::sqrt(sum / double(a.size()));
}

double max_magnitude(const std::vector<float> &a) {
    double m = 0;
    for (float v : a) m = std::max(m, double(std::fabs(v)));
    return m;
}

nlohmann::json spread_json(const std::vector<double> &samples, double audio_seconds) {
    const Spread s = spread_of(samples);
    return {{"min", s.min}, {"median", s.median}, {"min_per_audio_s", s.min / audio_seconds}};
}

} // namespace

nlohmann::json run_s3gen_bench(const BackendOptions &backend, const S3GenBenchArguments &options,
                               const S3GenOutputs *reference, S3GenOutputs &outputs) {
    auto start = Clock::now();
    const PipelineModel engine({options.weights, backend, components(Component::flow, Component::vocoder)});
    const double load_ms = ms_since(start);
    const s3gen::FlowModel &flow = engine.flow();
    const s3gen::FlowHParams &hp = flow.hparams();
    PipelineSessionOptions session_options;
    session_options.flow_attention = options.attention;
    PipelineSession engine_session(engine, session_options);
    s3gen::FlowSession &session = engine_session.flow();
    session.set_cfm_steps(options.cfm_steps);
    hift::VocoderSession &vocoder = engine_session.vocoder();

    const Request request = make_request(options, hp);
    const int64_t prompt_frames = int64_t(request.reference.prompt_mel.size()) / hp.mel_bins;
    std::vector<double> encoder_ms, step_ms, cfm_ms, hift_ms, encoder_cpu_ms, cfm_cpu_ms, hift_cpu_ms;
    int64_t frames = 0;
    // Every run is timed; the first one also builds the graphs (cold), so the minimum of two or
    // more runs is the warm figure. The outputs of every run are the same (fixed seeds).
    for (int run = 0; run < options.repeats; ++run) {
        const auto run_start = Clock::now();
        const double cpu_start = process_cpu_ms();
        const s3gen::FlowEncoding encoding = session.encode(request.tokens, request.reference);
        const auto encoded = Clock::now();
        const double cpu_encoded = process_cpu_ms();
        std::vector<Clock::time_point> step_ends;
        const std::vector<float> full =
            session.solve(encoding, request.reference, request.noise,
                          [&](int, const std::vector<float> &) { step_ends.push_back(Clock::now()); });
        const auto solved = Clock::now();
        const double cpu_solved = process_cpu_ms();
        const s3gen::Mel mel = s3gen::generated_part(full, hp.mel_bins, encoding.frames, prompt_frames);
        std::vector<float> wave = vocoder.synthesize(mel.values, nullptr, options.seed);
        const auto end = Clock::now();
        const double cpu_end = process_cpu_ms();
        frames = encoding.frames;
        encoder_ms.push_back(ms_between(run_start, encoded));
        for (size_t i = 0; i < step_ends.size(); ++i)
            step_ms.push_back(ms_between(i == 0 ? encoded : step_ends[i - 1], step_ends[i]));
        cfm_ms.push_back(ms_between(encoded, solved));
        hift_ms.push_back(ms_between(solved, end));
        encoder_cpu_ms.push_back(cpu_encoded - cpu_start);
        cfm_cpu_ms.push_back(cpu_solved - cpu_encoded);
        hift_cpu_ms.push_back(cpu_end - cpu_solved);
        if (run == 0) outputs = S3GenOutputs{mel.values, std::move(wave)};
    }

    const double audio_seconds = double(frames - prompt_frames) / 50.0; // 50 mel frames per second
    const EstimatorFlops flops = count_estimator_flops(flow.estimator(), hp, frames);
    const double best_step_ms = spread_of(step_ms).min;
    // The estimator's linear layers carry the bulk of its FLOPs; their stored type names the run.
    const ggml_type matrix_type =
        engine.files().weights().get("s3gen.flow.decoder.estimator.mid_blocks.0.1.0.attn1.to_q.weight").type;
    nlohmann::json out{{"weights", options.weights},
                       {"matrix_type", ggml_type_name(matrix_type)},
                       {"backend", engine_session.backend().description()},
                       {"attention", nn::attention_path_name(options.attention)},
                       {"kernel", main_kernel(flow.matmul_kernel_counts())},
                       {"flow_kernels", flow.matmul_kernel_counts()},
                       {"cfm_steps", s3gen::cfm_steps(hp, options.cfm_steps)},
                       {"prompt_tokens", options.prompt_tokens},
                       {"generated_tokens", options.generated_tokens},
                       {"mel_frames", frames},
                       {"audio_seconds", audio_seconds},
                       {"repeats", options.repeats},
                       {"load_ms", load_ms},
                       {"encoder_ms", spread_json(encoder_ms, audio_seconds)},
                       {"cfm_step_ms", spread_json(step_ms, audio_seconds)},
                       {"cfm_ms", spread_json(cfm_ms, audio_seconds)},
                       {"hift_ms", spread_json(hift_ms, audio_seconds)},
                       {"encoder_cpu_ms", spread_json(encoder_cpu_ms, audio_seconds)},
                       {"cfm_cpu_ms", spread_json(cfm_cpu_ms, audio_seconds)},
                       {"hift_cpu_ms", spread_json(hift_cpu_ms, audio_seconds)},
                       {"estimator_gflop", (flops.matmul + flops.attention) / 1e9},
                       {"estimator_matmul_gflop", flops.matmul / 1e9},
                       {"estimator_attention_gflop", flops.attention / 1e9},
                       {"estimator_graph_nodes", flops.nodes},
                       {"estimator_gflop_per_s", (flops.matmul + flops.attention) / (best_step_ms * 1e6)}};
    if (reference) {
        out["mel_max_diff"] = max_abs_diff(outputs.mel, reference->mel);
        out["mel_rms_diff"] = rms_diff(outputs.mel, reference->mel);
        out["mel_max_magnitude"] = max_magnitude(reference->mel);
        out["wave_max_diff"] = max_abs_diff(outputs.wave, reference->wave);
        out["wave_max_magnitude"] = max_magnitude(reference->wave);
    }
    return out;
}

} // namespace chatterbox::bench
