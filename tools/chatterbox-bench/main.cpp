// chatterbox-bench: per-stage timings on this machine, as a table and optionally JSON.
//   chatterbox-bench t3 --weights DIR_OR_GGUF [--weights ...] [--threads N] [--tokens N] [--json FILE]

#include "core/backend.h"
#include "core/error.h"
#include "memory_bandwidth.h"
#include "t3_bench.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>

using namespace chatterbox;

namespace {

void print_t3_row(const nlohmann::json &r) {
    std::printf("%-6s %-5s %-4s %9.0f %8.1f %10.0f %11.1f %9.1f", r["matrix_type"].get<std::string>().c_str(),
                r["attention"].get<std::string>().c_str(), r["kv_type"].get<std::string>().c_str(),
                r["load_ms"].get<double>(), r["conditioning_ms"].get<double>(), r["prefill_ms"].get<double>(),
                r["decode_ms_per_token"].get<double>(), r["decode_ms_median"].get<double>());
    if (r.contains("bound_ms"))
        std::printf(" %9.1f %6.2fx", r["bound_ms"].get<double>(), r["ratio_to_bound"].get<double>());
    std::printf("  %s\n", r["weights"].get<std::string>().c_str());
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

    CLI::App *t3 = app.add_subcommand("t3", "T3 prefill and decode ms/token against the memory-bandwidth bound");
    std::vector<std::string> weights;
    bench::T3BenchOptions t3_options;
    bool no_bandwidth = false;
    t3->add_option("--weights", weights, "folder with t3_cfg.safetensors or a GGUF (repeat to compare precisions)")
        ->required();
    t3->add_option("--tokens", t3_options.decode_tokens, "timed decode steps")->capture_default_str();
    t3->add_option("--text-tokens", t3_options.text_tokens, "text ids in the prompt")->capture_default_str();
    t3->add_option("--cfg", t3_options.cfg_weight, "cfg_weight (0 runs one row)")->capture_default_str();
    t3->add_flag("--plain", t3_options.plain_attention, "plain attention instead of flash attention");
    t3->add_flag("--f32-cache", t3_options.f32_cache, "f32 KV cache instead of f16");
    t3->add_flag("--no-bandwidth", no_bandwidth, "skip the memory bandwidth probe and the bound");
    CLI11_PARSE(app, argc, argv);

    try {
        Backend backend(backend_options);
        nlohmann::json results{{"backend", backend.description()}};
        if (!no_bandwidth) {
            const bench::BandwidthResult bw = bench::measure_read_bandwidth(size_t(2) << 30, backend.threads());
            std::printf("memory read bandwidth: %.1f GB/s (%d threads, %.0f MiB buffer, best of 5)\n", bw.gb_per_s,
                        bw.threads, double(bw.bytes) / (1 << 20));
            t3_options.bandwidth_gb_per_s = bw.gb_per_s;
            results["read_bandwidth_gb_per_s"] = bw.gb_per_s;
        }
        std::printf("T3 on %s, %d decode steps, cfg %.2g\n", backend.description().c_str(), t3_options.decode_tokens,
                    double(t3_options.cfg_weight));
        std::printf("%-6s %-5s %-4s %9s %8s %10s %11s %9s %9s %7s\n", "matrix", "attn", "kv", "load_ms", "cond_ms",
                    "prefill_ms", "decode_mean", "median", "bound_ms", "ratio");
        for (const std::string &w : weights) {
            t3_options.weights = w;
            nlohmann::json row = bench::run_t3_bench(backend, t3_options);
            print_t3_row(row);
            results["t3"].push_back(row);
        }
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
