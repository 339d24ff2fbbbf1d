// chatterbox-bench: per-stage timings on this machine, as a table and optionally JSON.
//   chatterbox-bench t3 --weights DIR_OR_GGUF [--weights ...] [--threads N] [--tokens N] [--max-new-tokens N]
//                       [--decode-bucket N] [--json FILE]
//   chatterbox-bench s3gen --weights DIR_OR_GGUF [--weights ...] [--prompt-tokens N] [--tokens N] [--cfm-steps N ...]
//   [--json FILE] chatterbox-bench pipeline --weights DIR_OR_GGUF [--weights ...] --voice REF.wav [--max-tokens N]
//   [--ignore-eos]
//                             [--no-split] [--json FILE]
//   chatterbox-bench server --weights DIR_OR_GGUF [--clients N ...] [--requests N] [--max-tokens N] [--json FILE]

#include "batch_bench.h"
#include "cli/engine_flags.h"
#include "core/backend.h"
#include "core/error.h"
#include "flow_batch_bench.h"
#include "kernels/matmul_kernel.h"
#include "machine_peak.h"
#include "matmul_probe.h"
#include "memory_bandwidth.h"
#include "pipeline_bench.h"
#include "s3gen_bench.h"
#include "sampler_bench.h"
#include "server_bench.h"
#include "t3_bench.h"
#include "vocoder_batch_bench.h"
#include "wyoming_bench.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <map>

using namespace chatterbox;

namespace {

void print_t3_row(const nlohmann::json &r) {
    std::printf("%-6s %-5s %-4s %6d %9.0f %8.1f %10.0f %10.0f %11.1f %9.1f %8.1f",
                r["matrix_type"].get<std::string>().c_str(), r["attention"].get<std::string>().c_str(),
                r["kv_type"].get<std::string>().c_str(), r["decode_bucket"].get<int>(), r["load_ms"].get<double>(),
                r["conditioning_ms"].get<double>(), r["prefill_ms"].get<double>(),
                r["prefill_with_voice_prefix_ms"].get<double>(), r["decode_ms_per_token"].get<double>(),
                r["decode_ms_median"].get<double>(), r["decode_cpu_ms_per_token"].get<double>());
    if (r.contains("bound_ms"))
        std::printf(" %9.1f %6.2fx", r["bound_ms"].get<double>(), r["ratio_to_bound"].get<double>());
    std::printf("  %s\n", r["weights"].get<std::string>().c_str());
}

// The memory read bandwidth the T3 bound divides by, printed and recorded in results.
double probe_read_bandwidth(Backend &backend, nlohmann::json &results) {
    const bench::BandwidthResult bw = bench::measure_read_bandwidth(size_t(2) << 30, backend.threads());
    std::printf("memory read bandwidth: %.1f GB/s (%d threads, %.0f MiB buffer, best of 5)\n", bw.gb_per_s, bw.threads,
                double(bw.bytes) / (1 << 20));
    results["read_bandwidth_gb_per_s"] = bw.gb_per_s;
    return bw.gb_per_s;
}

void run_t3(Backend &backend, const BackendOptions &backend_options, const std::vector<std::string> &weights,
            bench::T3BenchArguments options, bool with_bandwidth, nlohmann::json &results) {
    if (with_bandwidth) options.bandwidth_gb_per_s = probe_read_bandwidth(backend, results);
    std::printf("T3 on %s, %d decode steps, cfg %.2g\n", backend.description().c_str(), options.decode_tokens,
                double(options.cfg_weight));
    std::printf("%-6s %-5s %-4s %6s %9s %8s %10s %10s %11s %9s %8s %9s %7s\n", "matrix", "attn", "kv", "bucket",
                "load_ms", "cond_ms", "prefill_ms", "prefix_ms", "decode_mean", "median", "cpu_ms", "bound_ms",
                "ratio");
    for (const std::string &w : weights) {
        options.weights = w;
        nlohmann::json row = bench::run_t3_bench(backend_options, options);
        print_t3_row(row);
        if (row.contains("alignment_compare")) {
            const nlohmann::json &a = row["alignment_compare"];
            std::printf("alignment analyzer, %d interleaved pairs: ms/token without %s, with %s; ratio %.3f\n",
                        a["rounds"].get<int>(), a["plain_ms_per_token"].dump().c_str(),
                        a["alignment_ms_per_token"].dump().c_str(), a["ratio"].get<double>());
        }
        results["t3"].push_back(row);
    }
}

// The best ggml matrix-product rate, at the estimator's typical product: a 1024 x 1024 weight
// times the frames of both CFG rows.
double probe_matmul(Backend &backend, int64_t columns, nlohmann::json &results) {
    double best = 0;
    for (const bench::MatmulRate &r :
         bench::measure_matmul_rates(backend, {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0}, 1024, 1024, columns)) {
        std::printf("mul_mat %-4s (%lld x %lld) x (%lld x %lld): %.1f GFLOP/s\n", ggml_type_name(r.weight_type),
                    (long long)r.m, (long long)r.k, (long long)r.k, (long long)r.n, r.gflop_per_s);
        results["matmul_gflop_per_s"][ggml_type_name(r.weight_type)] = r.gflop_per_s;
        best = std::max(best, r.gflop_per_s);
    }
    results["best_matmul_gflop_per_s"] = best;
    return best;
}

void print_s3gen_row(const nlohmann::json &r, double best_matmul) {
    auto ms = [&](const char *key, const char *stat) { return r[key][stat].get<double>(); };
    const double rate = r["estimator_gflop_per_s"].get<double>();
    std::printf("%-6s %-11s %-7s %5d %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %7.0f %5.0f%%",
                r["matrix_type"].get<std::string>().c_str(), r["kernel"].get<std::string>().c_str(),
                r["attention"].get<std::string>().c_str(), r["cfm_steps"].get<int>(), r["load_ms"].get<double>(),
                ms("encoder_ms", "min"), ms("encoder_ms", "median"), ms("cfm_step_ms", "min"),
                ms("cfm_step_ms", "median"), ms("cfm_ms", "min"), ms("cfm_ms", "median"), ms("hift_ms", "min"), rate,
                100.0 * rate / best_matmul);
    std::printf(" %8.0f %8.0f %8.0f", ms("encoder_cpu_ms", "min"), ms("cfm_cpu_ms", "min"), ms("hift_cpu_ms", "min"));
    if (r.contains("mel_max_diff"))
        std::printf(" %9.2e %9.2e %9.2e", r["mel_max_diff"].get<double>(), r["mel_rms_diff"].get<double>(),
                    r["wave_max_diff"].get<double>());
    std::printf("  %s\n", r["weights"].get<std::string>().c_str());
}

void run_s3gen(Backend &backend, BackendOptions backend_options, const std::vector<std::string> &weights,
               const std::vector<std::string> &f32_kernels, const std::vector<nn::AttentionPath> &attentions,
               const std::vector<int> &cfm_steps, bench::S3GenBenchArguments options, nlohmann::json &results) {
    const int64_t frames = 2 * int64_t(options.prompt_tokens + options.generated_tokens);
    const double best_matmul = probe_matmul(backend, 2 * frames, results);
    std::printf("S3Gen on %s: %d prompt + %d generated tokens (%lld mel frames, %.1f s of audio), %d timed runs\n",
                backend.description().c_str(), options.prompt_tokens, options.generated_tokens, (long long)frames,
                options.generated_tokens / 25.0, options.repeats);
    std::printf("%-6s %-11s %-7s %5s %8s %8s %8s %8s %8s %8s %8s %8s %7s %6s %8s %8s %8s %9s %9s %9s\n", "matrix",
                "flow_kernel", "attn", "steps", "load_ms", "enc_min", "enc_med", "step_min", "step_med", "cfm_min",
                "cfm_med", "hift_min", "GFLOP/s", "of_mm", "enc_cpu", "cfm_cpu", "hift_cpu", "mel_diff", "mel_rms",
                "wave_diff");
    bench::S3GenOutputs reference;
    bool first_row = true;
    // One row per combination; each loads its own engine, so the f32 kernel is that engine's backend option.
    const KernelSelection selection = backend_options.kernels;
    for (const std::string &w : weights)
        for (const std::string &f32_kernel : f32_kernels)
            for (nn::AttentionPath attention : attentions)
                for (int steps : cfm_steps) {
                    options.weights = w;
                    options.attention = attention;
                    options.cfm_steps = steps;
                    backend_options.kernels = selection;
                    if (f32_kernel != "ggml") backend_options.kernels.enable.push_back(f32_kernel);
                    bench::S3GenOutputs outputs;
                    nlohmann::json row =
                        bench::run_s3gen_bench(backend_options, options, first_row ? nullptr : &reference, outputs);
                    row["of_best_matmul"] = row["estimator_gflop_per_s"].get<double>() / best_matmul;
                    print_s3gen_row(row, best_matmul);
                    results["s3gen"].push_back(row);
                    if (first_row) reference = std::move(outputs);
                    first_row = false;
                }
    const nlohmann::json &first = results["s3gen"][0];
    std::printf("estimator FLOPs per step: %.1f G (matmul %.1f G + attention %.1f G); per second of audio: "
                "encoder, step, CFM, HiFT = min_ms / %.1f s\n",
                first["estimator_gflop"].get<double>(), first["estimator_matmul_gflop"].get<double>(),
                first["estimator_attention_gflop"].get<double>(), first["audio_seconds"].get<double>());
}

void run_pipeline(Backend &backend, const BackendOptions &backend_options, const std::vector<std::string> &weights,
                  bench::PipelineBenchArguments options, bool with_bandwidth, nlohmann::json &results) {
    if (with_bandwidth) {
        // The machine's own peaks, measured in this run: each stage is stated against them.
        const bench::MachinePeak peak = bench::measure_machine_peak(backend.threads());
        results["peak"] = bench::report_machine_peak(peak);
        options.bandwidth_gb_per_s = peak.read_bandwidth_gb.all_threads;
        options.f32_peak_gflop_per_s = peak.f32_fma_gflop.all_threads;
    }
    std::printf("pipeline, %d threads: \"%s\", voice %.0f s, max_new_tokens %d%s%s%s\n", backend.threads(),
                options.text.c_str(), options.voice_seconds, options.max_new_tokens,
                options.ignore_eos ? ", EOS ignored" : "", options.split_text ? "" : ", text not split",
                options.cfm_steps ? concat(", ", options.cfm_steps, " CFM steps").c_str() : "");
    std::printf("%-40s %8s %8s %8s %8s %8s %8s %6s %6s %5s %8s %8s %6s %7s %6s %8s %8s %8s %8s\n", "weights", "load_ms",
                "voice_ms", "t3_ms", "s3gen_ms", "hift_ms", "total_ms", "tokens", "steps", "eos", "t3_step", "t3_bound",
                "ratio", "audio_s", "RTF", "ttfa_ms", "ttfa_kept", "strm_ms", "peak_MiB");
    for (const std::string &w : weights) {
        options.weights = w;
        const nlohmann::json r = bench::run_pipeline_bench(backend_options, options);
        auto ms = [&](const char *key) { return r.contains(key) ? r[key].get<double>() : 0.0; };
        const int eos_step = r["eos_step"].empty() ? -1 : r["eos_step"][0].get<int>(); // the first piece's
        std::printf("%-40s %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %6d %6d %5d %8.1f %8.1f %6.2f %7.2f %6.2f %8.0f %8.0f "
                    "%8.0f %8.0f\n",
                    w.c_str(), ms("load_ms"), ms("voice_ms"), ms("t3_ms"), ms("s3gen_ms"), ms("hift_ms"),
                    ms("total_ms"), r["speech_tokens"].get<int>(), r["t3_steps"].get<int>(), eos_step,
                    ms("t3_decode_ms_per_step"), ms("t3_bound_ms"), ms("t3_ratio_to_bound"), ms("audio_seconds"),
                    ms("rtf"), ms("stream_first_audio_ms"), ms("stream_first_audio_kept_voice_ms"),
                    ms("stream_total_ms"), ms("peak_rss_mib"));
        std::printf("%-40s", "  GFLOP/s (% of f32 FMA peak)");
        for (const char *stage : {"voice", "t3", "s3gen", "hift"}) {
            std::printf("  %s %.1f", stage, r["stage_gflop_per_s"][stage].get<double>());
            if (r.contains("stage_of_f32_peak"))
                std::printf(" (%.0f%%)", 100.0 * r["stage_of_f32_peak"][stage].get<double>());
        }
        std::printf("\n");
        results["pipeline"].push_back(r);
    }
}

void run_server(const BackendOptions &backend_options, const bench::ServerBenchArguments &options,
                nlohmann::json &results) {
    const EngineSettings &shared = options.shared;
    std::printf("server, %d thread(s) per session, batches T3 %d, flow %d, vocoder %d (%d thread(s), 0: all cores), "
                "%d kept voice prefixes, KV cache %s: \"%s\", max_new_tokens %d%s, %d streamed pcm request(s) per "
                "client\n",
                options.session_threads, shared.batch, shared.flow_batch, shared.vocoder_batch, shared.batch_threads,
                shared.voice_prefixes, shared.kv_cache.c_str(), options.text.c_str(), options.max_new_tokens,
                options.ignore_eos ? " (EOS ignored)" : "", options.requests_per_client);
    std::printf("%7s %8s %8s %6s %8s %8s %8s %9s %9s %9s %9s %9s %8s\n", "clients", "sessions", "requests", "failed",
                "wall_s", "cpu_s", "audio_s", "audio/s", "req/s", "ttfb_min", "ttfb_med", "ttfb_max", "peak_MiB");
    const nlohmann::json rows = bench::run_server_bench(backend_options, options);
    for (const nlohmann::json &r : rows) {
        const auto ttfb = [&](const char *stat) {
            return r.contains("ttfb_ms") ? r["ttfb_ms"][stat].get<double>() : 0;
        };
        std::printf("%7d %8d %8d %6d %8.1f %8.1f %8.1f %9.2f %9.2f %9.0f %9.0f %9.0f %8.0f\n", r["clients"].get<int>(),
                    r["sessions"].get<int>(), r["requests"].get<int>(), r["failed"].get<int>(),
                    r["wall_s"].get<double>(), r["cpu_s"].get<double>(), r["audio_s"].get<double>(),
                    r["audio_s_per_s"].get<double>(), r["requests_per_s"].get<double>(), ttfb("min"), ttfb("median"),
                    ttfb("max"), r["peak_rss_mib"].get<double>());
        if (r["failed"].get<int>() > 0) std::printf("        server side: %s\n", r["syntheses"].dump().c_str());
    }
    results["server"] = rows;
}

void run_batch(const BackendOptions &backend_options, const bench::BatchBenchArguments &options,
               nlohmann::json &results) {
    std::printf("T3 batch, %d thread(s): %d forced decode tokens per request, cfg %g, KV cache %s, %d round(s)\n",
                backend_options.threads, options.decode_tokens, options.cfg_weight, options.kv_cache.c_str(),
                options.rounds);
    std::printf("%8s %6s %9s %7s %9s %8s %10s %7s %10s %10s %9s\n", "requests", "round", "window_s", "tokens",
                "tokens/s", "ratio", "occupancy", "cpu_s", "decode_ms", "sample_ms", "prefill_s");
    const nlohmann::json rows = bench::run_batch_bench(backend_options, options);
    for (const nlohmann::json &r : rows) {
        std::printf("%8d %6d %9.2f %7zu %9.2f %8.2f %10.2f %7.1f %10.2f %10.2f %9.2f\n", r["requests"].get<int>(),
                    r["round"].get<int>(), r["window_s"].get<double>(), r["tokens"].get<size_t>(),
                    r["tokens_per_s"].get<double>(), r.value("ratio_to_single", 0.0), r["mean_occupancy"].get<double>(),
                    r["cpu_s"].get<double>(), r["decode_ms_per_step"].get<double>(),
                    r["sample_ms_per_step"].get<double>(), r["prefill_s"].get<double>());
        if (r.contains("join"))
            std::printf("         a late joiner: prefill %.0f ms; the others' step %.0f ms before it, %.0f ms at most "
                        "while it prefilled and joined (%.2f steps)\n",
                        r["join"]["prefill_ms"].get<double>(), r["join"]["median_step_ms"].get<double>(),
                        r["join"]["longest_step_ms"].get<double>(), r["join"]["longest_in_steps"].get<double>());
    }
    results["batch"] = rows;
}

void run_flow_batch(const BackendOptions &backend_options, const bench::FlowBatchBenchArguments &options,
                    nlohmann::json &results) {
    std::printf("flow batch, %d thread(s): %d speech tokens in the first request, %d round(s)\n",
                backend_options.threads, options.tokens, options.rounds);
    std::printf("%8s %6s %7s %12s %9s %7s %10s %9s\n", "requests", "round", "mel_s", "sequential_s", "batched_s",
                "ratio", "occupancy", "max_diff");
    const nlohmann::json rows = bench::run_flow_batch_bench(backend_options, options);
    for (const nlohmann::json &r : rows)
        std::printf("%8d %6d %7.2f %12.2f %9.2f %7.2f %10.2f %9.1e\n", r["requests"].get<int>(), r["round"].get<int>(),
                    r["mel_s"].get<double>(), r["sequential_s"].get<double>(), r["batched_s"].get<double>(),
                    r["ratio"].get<double>(), r["mean_occupancy"].get<double>(), r["max_difference"].get<double>());
    results["flow_batch"] = rows;
}

void run_vocoder_batch(const BackendOptions &backend_options, const bench::VocoderBatchBenchArguments &options,
                       nlohmann::json &results) {
    std::printf("vocoder batch, %d thread(s): %lld mel frames in the first request, %d round(s)\n",
                backend_options.threads, (long long)options.frames, options.rounds);
    std::printf("%8s %7s %6s %8s %12s %9s %7s %10s %9s\n", "requests", "lengths", "round", "audio_s", "sequential_s",
                "batched_s", "ratio", "occupancy", "max_diff");
    const nlohmann::json rows = bench::run_vocoder_batch_bench(backend_options, options);
    for (const nlohmann::json &r : rows)
        std::printf("%8d %7s %6d %8.2f %12.2f %9.2f %7.2f %10.2f %9.1e\n", r["requests"].get<int>(),
                    r["lengths"].get<std::string>().c_str(), r["round"].get<int>(), r["audio_s"].get<double>(),
                    r["sequential_s"].get<double>(), r["batched_s"].get<double>(), r["ratio"].get<double>(),
                    r["mean_occupancy"].get<double>(), r["max_difference"].get<double>());
    results["vocoder_batch"] = rows;
}

void run_wyoming(const BackendOptions &backend_options, const bench::WyomingBenchArguments &options,
                 nlohmann::json &results) {
    std::printf("wyoming, %d thread(s), one session, max_new_tokens %d%s per sentence, %d repeat(s)\n",
                options.session_threads, options.max_new_tokens, options.ignore_eos ? " (EOS ignored)" : "",
                options.repeats);
    const nlohmann::json row = bench::run_wyoming_bench(backend_options, options);
    const auto spread = [&](const char *name) {
        const nlohmann::json &s = row[name];
        char text[96];
        std::snprintf(text, sizeof text, "%.0f / %.0f / %.0f", s["min"].get<double>(), s["median"].get<double>(),
                      s["max"].get<double>());
        return std::string(text);
    };
    std::printf("first complete sentence -> first audio-chunk, ms (min / median / max): %s\n",
                spread("sentence_to_first_audio_ms").c_str());
    std::printf("synthesize of that sentence -> first audio-chunk, ms:                 %s\n",
                spread("synthesize_to_first_audio_ms").c_str());
    std::printf("whole stream, ms: %s; audio %.2f s; CPU %.1f s over %.1f s wall\n", spread("stream_total_ms").c_str(),
                row["audio_s"].get<double>(), row["cpu_s"].get<double>(), row["wall_s"].get<double>());
    results["wyoming"] = row;
}

void run_sampler(const bench::SamplerBenchArguments &options, nlohmann::json &results) {
    std::printf("T3 sampler per token (vocabulary %d, English recipe), %d tokens x %d rounds, medians in us\n",
                options.vocab, options.tokens, options.rounds);
    std::printf("%6s %8s %8s %12s %14s %12s %14s %8s\n", "sigma", "kept", "stages", "torch_draw", "previous_draw",
                "torch_token", "previous_token", "loadavg");
    const nlohmann::json rows = bench::run_sampler_bench(options);
    for (const nlohmann::json &r : rows)
        std::printf("%6.1f %8.1f %8.1f %12.1f %14.1f %12.1f %14.1f %8.2f\n", r["sigma"].get<double>(),
                    r["kept_tokens"].get<double>(), r["stages_us"].get<double>(), r["torch_draw_us"].get<double>(),
                    r["previous_draw_us"].get<double>(), r["torch_token_us"].get<double>(),
                    r["previous_token_us"].get<double>(), r["loadavg"].get<double>());
    results["sampler"] = rows;
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"Chatterbox benchmarks"};
    app.require_subcommand(1);
    app.fallthrough(); // global options may also follow the subcommand
    BackendOptions backend_options;
    backend_options.threads = 2;
    std::string json_path;
    app.add_option("--device", backend_options.device, "cpu or cuda")->capture_default_str();
    app.add_option("--threads", backend_options.threads, "CPU threads (0 = all)")->capture_default_str();
    app.add_option("--json", json_path, "also write the results to this JSON file");
    bool no_repack = false;
    bool no_bandwidth = false;
    app.add_flag("--no-repack", no_repack, "every matrix in ggml's plain layout: no matmul kernel takes any");
    app.add_option("--enable-kernel", backend_options.kernels.enable,
                   "a matmul kernel that is off by default, on (kernels/matmul_kernel.h; repeat for more)");
    app.add_option(
        "--disable-kernel", backend_options.kernels.disable,
        "a kernel left out, e.g. q4k_avx512_vnni to compare with q4k_avx2, onednn_bf16 for the f32 flow, "
        "conv1d_avx512 conv1d_avx2 for im2col convolutions (matmul_kernel.h, conv_kernel.h; repeat for more)");
    app.add_option("--tile-rows", backend_options.kernels.tile_rows_per_pass,
                   "rows per pass of the engine's q4_K and q8_0 kernels (1-8, at most the set's own; default: the "
                   "CPU's)")
        ->check(CLI::Range(0, 8));
    bool fixed_threads = false;
    app.add_flag("--fixed-threads", fixed_threads,
                 "always --threads, also while other processes keep CPUs busy (default: fewer then)");

    CLI::App *t3 = app.add_subcommand("t3", "T3 prefill and decode ms/token against the memory-bandwidth bound");
    std::vector<std::string> t3_weights;
    bench::T3BenchArguments t3_options;
    t3->add_option("--weights", t3_weights, "folder with t3_cfg.safetensors or a GGUF (repeat to compare precisions)")
        ->required();
    t3->add_option("--tokens", t3_options.decode_tokens, "timed decode steps")->capture_default_str();
    t3->add_option("--max-new-tokens", t3_options.max_new_tokens,
                   "size the KV cache as a request with this max_new_tokens does (0: --tokens + 1)")
        ->capture_default_str();
    t3->add_option("--decode-bucket", t3_options.decode_bucket,
                   "decode graphs attend over the used positions rounded up to this; at least the cache capacity: "
                   "one graph over the whole cache, as before buckets")
        ->capture_default_str();
    t3->add_option("--text-tokens", t3_options.text_tokens, "text ids in the prompt")->capture_default_str();
    t3->add_option("--cfg", t3_options.cfg_weight, "cfg_weight (0 runs one row)")->capture_default_str();
    t3->add_flag("--plain", t3_options.plain_attention, "plain attention instead of flash attention");
    t3->add_flag("--f32-cache", t3_options.f32_cache, "f32 KV cache instead of f16");
    t3->add_option("--alignment-rounds", t3_options.alignment_rounds,
                   "also time this many interleaved pairs of requests without and with the alignment analyzer")
        ->capture_default_str();
    t3->add_flag("--no-bandwidth", no_bandwidth, "skip the memory bandwidth probe and the bound");

    CLI::App *s3gen = app.add_subcommand(
        "s3gen", "S3Gen flow encoder, CFM steps and HiFT per second of audio; estimator FLOP rate against mul_mat");
    std::vector<std::string> s3gen_weights;
    bench::S3GenBenchArguments s3gen_options;
    s3gen
        ->add_option("--weights", s3gen_weights,
                     "official folder or GGUF (repeat to compare; later ones are compared with the first)")
        ->required();
    s3gen->add_option("--prompt-tokens", s3gen_options.prompt_tokens, "voice prompt tokens (25 per second)")
        ->capture_default_str();
    s3gen->add_option("--tokens", s3gen_options.generated_tokens, "generated speech tokens (25 per second)")
        ->capture_default_str();
    s3gen->add_option("--repeats", s3gen_options.repeats, "timed runs (the first also builds the graphs)")
        ->capture_default_str();
    s3gen->add_option("--seed", s3gen_options.seed, "seed of the inputs and noise")->capture_default_str();
    std::vector<nn::AttentionPath> attentions{s3gen::default_estimator_attention()};
    const std::map<std::string, nn::AttentionPath> attention_names{{"flash", nn::AttentionPath::flash},
                                                                   {"plain", nn::AttentionPath::plain},
                                                                   {"blocked", nn::AttentionPath::blocked}};
    s3gen->add_option("--attention", attentions, "estimator attention: flash, plain, blocked (repeat to compare)")
        ->transform(CLI::CheckedTransformer(attention_names))
        ->capture_default_str();
    std::vector<std::string> f32_kernels{"ggml"};
    s3gen->add_option("--f32-kernel", f32_kernels, "f32 weight products: ggml, onednn_f32 (repeat to compare)")
        ->check(CLI::IsMember({"ggml", "onednn_f32"}))
        ->capture_default_str();
    std::vector<int> cfm_steps{0};
    s3gen
        ->add_option("--cfm-steps", cfm_steps,
                     "CFM Euler steps, 0: the model's own (repeat to compare: later rows' mel distance is from the "
                     "first's)")
        ->check(CLI::Range(0, s3gen::kMaxCfmSteps))
        ->capture_default_str();

    CLI::App *pipeline = app.add_subcommand(
        "pipeline", "whole text-to-speech: per-stage times, real-time factor, time to first audio, peak RSS");
    std::vector<std::string> pipeline_weights;
    bench::PipelineBenchArguments pipeline_options;
    pipeline_options.text = "The quick brown fox jumps over the lazy dog, then it runs back into the forest, where "
                            "nobody can find it again until the morning.";
    bool no_stream = false;
    pipeline->add_option("--weights", pipeline_weights, "official folder or GGUF (repeat to compare precisions)")
        ->required();
    pipeline->add_option("--voice", pipeline_options.voice_wav, "voice recording (repeated or cut to --voice-seconds)")
        ->required();
    pipeline->add_option("--voice-seconds", pipeline_options.voice_seconds, "voice prompt length")
        ->capture_default_str();
    pipeline->add_option("--text", pipeline_options.text, "one sentence to say")->capture_default_str();
    pipeline->add_option("--language", pipeline_options.language, "the text's language, for a multilingual model")
        ->capture_default_str();
    pipeline->add_option("--max-tokens", pipeline_options.max_new_tokens, "T3 max_new_tokens (fixes the length)")
        ->capture_default_str();
    pipeline->add_flag("--ignore-eos", pipeline_options.ignore_eos,
                       "T3 makes exactly --max-tokens tokens; the step it would have ended at is still reported");
    bool no_split = false;
    pipeline->add_flag("--no-split", no_split, "say the text in one T3 pass, even with several sentences");
    pipeline->add_option("--cfm-steps", pipeline_options.cfm_steps, "the flow's Euler steps (0: the model's own)")
        ->check(CLI::Range(0, s3gen::kMaxCfmSteps))
        ->capture_default_str();
    pipeline->add_flag("--no-bandwidth", no_bandwidth,
                       "skip the machine probes (peak rates, bandwidth): no T3 bound, no share of peak");
    pipeline->add_option("--seed", pipeline_options.seed, "sampling and noise seed")->capture_default_str();
    pipeline->add_flag("--no-stream", no_stream, "skip the streaming run (time to first audio)");
    pipeline
        ->add_option("--stream-prompt-tokens", pipeline_options.stream_prompt_tokens,
                     "voice prompt tokens the streaming flow windows see (0: all)")
        ->capture_default_str();

    CLI::App *server = app.add_subcommand(
        "server", "chatterbox-server in-process under 1, 4, 16 concurrent clients: time to first byte, throughput");
    bench::ServerBenchArguments server_options;
    server->add_option("--weights", server_options.weights, "official folder or GGUF")->required();
    server->add_option("--clients", server_options.clients, "concurrent clients, one run per value")
        ->capture_default_str();
    server->add_option("--requests", server_options.requests_per_client, "streamed requests per client")
        ->capture_default_str();
    server->add_option("--sessions", server_options.sessions, "server sessions (0: as many as clients)")
        ->capture_default_str();
    server->add_option("--session-threads", server_options.session_threads, "CPU threads per session")
        ->capture_default_str();
    chatterbox::cli_flags::add_engine_flags(*server, server_options.shared,
                                            chatterbox::cli_flags::EngineFlags::shared_services);
    server->add_option("--max-tokens", server_options.max_new_tokens, "T3 max_new_tokens per request")
        ->capture_default_str();
    bool server_stop_at_eos = false;
    server->add_flag("--stop-at-eos", server_stop_at_eos,
                     "let T3 stop at end-of-speech (default: --max-tokens tokens)");
    server->add_option("--text", server_options.text, "what every request says")->capture_default_str();
    CLI::App *batch = app.add_subcommand(
        "batch", "T3 decode batched across 1, 2, 4, 8 concurrent requests: aggregate tokens/s against one request");
    bench::BatchBenchArguments batch_options;
    batch->add_option("--weights", batch_options.weights, "official folder or GGUF")->required();
    batch->add_option("--requests", batch_options.levels, "concurrent requests, one run per value")
        ->capture_default_str();
    batch->add_option("--tokens", batch_options.decode_tokens, "decode tokens per request")->capture_default_str();
    batch->add_option("--cfg", batch_options.cfg_weight, "cfg_weight (0 runs one row per request)")
        ->capture_default_str();
    batch->add_option("--rounds", batch_options.rounds, "runs of all levels, interleaved")->capture_default_str();
    batch->add_option("--kv-cache", batch_options.kv_cache, "T3 KV cache type of the requests and the batch")
        ->check(CLI::IsMember({"f16", "q8_0"}))
        ->capture_default_str();
    batch->add_flag("--late-joiner", batch_options.late_joiner,
                    "per level, a second run with one more request prefilling mid-batch: does it stall the others?");
    CLI::App *flow_batch = app.add_subcommand(
        "flow-batch", "the flow's CFM steps of 1, 2, 4 requests: one after another against batched (same mel)");
    bench::FlowBatchBenchArguments flow_batch_options;
    flow_batch->add_option("--weights", flow_batch_options.weights, "official folder or GGUF")->required();
    flow_batch->add_option("--requests", flow_batch_options.levels, "concurrent requests, one run per value")
        ->capture_default_str();
    flow_batch->add_option("--tokens", flow_batch_options.tokens, "speech tokens of the first request")
        ->capture_default_str();
    flow_batch->add_option("--prompt-tokens", flow_batch_options.prompt_tokens, "speech tokens of the voice prompt")
        ->capture_default_str();
    flow_batch->add_option("--rounds", flow_batch_options.rounds, "runs of all levels, interleaved")
        ->capture_default_str();
    CLI::App *vocoder_batch = app.add_subcommand(
        "vocoder-batch", "the HiFT vocoder on 1, 2, 4 mels: one after another against batched (same waves)");
    bench::VocoderBatchBenchArguments vocoder_batch_options;
    vocoder_batch->add_option("--weights", vocoder_batch_options.weights, "official folder or GGUF")->required();
    vocoder_batch->add_option("--requests", vocoder_batch_options.levels, "concurrent requests, one run per value")
        ->capture_default_str();
    vocoder_batch->add_option("--frames", vocoder_batch_options.frames, "mel frames of the first request")
        ->capture_default_str();
    vocoder_batch->add_option("--rounds", vocoder_batch_options.rounds, "runs of all levels, interleaved")
        ->capture_default_str();
    CLI::App *sampler = app.add_subcommand(
        "sampler", "T3's sampler per token: torch.multinomial's draw against the previous inverse-CDF draw");
    bench::SamplerBenchArguments sampler_options;
    sampler->add_option("--sigmas", sampler_options.sigmas, "spread of the synthetic logits, one run per value")
        ->capture_default_str();
    sampler->add_option("--tokens", sampler_options.tokens, "timed tokens per draw and round")->capture_default_str();
    sampler->add_option("--rounds", sampler_options.rounds, "rounds, the draws alternated")->capture_default_str();
    CLI::App *wyoming = app.add_subcommand(
        "wyoming",
        "chatterbox-server's Wyoming side, text streamed word by word: first complete sentence -> first audio");
    bench::WyomingBenchArguments wyoming_options;
    wyoming->add_option("--weights", wyoming_options.weights, "official folder or GGUF")->required();
    wyoming->add_option("--repeats", wyoming_options.repeats, "streams (and plain synthesize events) measured")
        ->capture_default_str();
    wyoming->add_option("--session-threads", wyoming_options.session_threads, "CPU threads of the session")
        ->capture_default_str();
    wyoming->add_option("--max-tokens", wyoming_options.max_new_tokens, "T3 max_new_tokens per sentence")
        ->capture_default_str();
    bool wyoming_stop_at_eos = false;
    wyoming->add_flag("--stop-at-eos", wyoming_stop_at_eos, "let T3 stop at end-of-speech (default: --max-tokens)");
    CLI::App *peak = app.add_subcommand(
        "peak", "this machine's peak f32 FMA, bf16 and int8 dot-product rates and read bandwidth, 1 and --threads");
    CLI11_PARSE(app, argc, argv);
    wyoming_options.ignore_eos = !wyoming_stop_at_eos;
    server_options.ignore_eos = !server_stop_at_eos;
    if (no_repack)
        for (const kernels::MatmulKernel *kernel : kernels::matmul_kernels())
            backend_options.kernels.disable.push_back(kernel->name());
    backend_options.adapt_threads = !fixed_threads;
    pipeline_options.stream = !no_stream;
    pipeline_options.split_text = !no_split;
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // rows appear as they are measured, also when piped to a file

    try {
        kernels::check_kernel_selection(backend_options.kernels);
        Backend backend(backend_options);
        nlohmann::json results{{"backend", backend.description()}};
        if (*t3) run_t3(backend, backend_options, t3_weights, t3_options, !no_bandwidth, results);
        if (*s3gen)
            run_s3gen(backend, backend_options, s3gen_weights, f32_kernels, attentions, cfm_steps, s3gen_options,
                      results);
        if (*pipeline)
            run_pipeline(backend, backend_options, pipeline_weights, pipeline_options, !no_bandwidth, results);
        if (*server) run_server(backend_options, server_options, results);
        if (*wyoming) run_wyoming(backend_options, wyoming_options, results);
        if (*batch) run_batch(backend_options, batch_options, results);
        if (*flow_batch) run_flow_batch(backend_options, flow_batch_options, results);
        if (*vocoder_batch) run_vocoder_batch(backend_options, vocoder_batch_options, results);
        if (*sampler) run_sampler(sampler_options, results);
        if (*peak) results["peak"] = bench::report_machine_peak(bench::measure_machine_peak(backend.threads()));
        if (!json_path.empty()) {
            std::ofstream out(json_path);
            if (!out) fail("cannot write ", json_path);
            out << results.dump(2) << "\n";
        }
    } catch (const Error &e) {
        std::fprintf(stderr, "chatterbox-bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
