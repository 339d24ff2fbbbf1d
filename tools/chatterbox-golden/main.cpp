// chatterbox-golden: recompute the stages of a golden case and write each result as <name>.npy,
// so parity with the official implementation can be checked on any case.
//
//   chatterbox-golden --case CASE.json --inputs GOLDEN_DIR --model PATH --out OUT_DIR
//   chatterbox-golden torch-rng --golden TORCH_RNG_DIR --out OUT_DIR   (torch_rng.h)

#include "golden_run.h"
#include "stages.h"
#include "torch_rng.h"

#include "core/error.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using namespace chatterbox;
using namespace chatterbox::golden;

namespace {

// Array names of the golden set, in index.json order (when the inputs folder has one).
std::vector<std::string> golden_array_names(const std::string &inputs_dir) {
    std::ifstream in(inputs_dir + "/index.json");
    if (!in) return {};
    auto index = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    std::vector<std::string> names;
    if (index.is_object() && index.contains("arrays") && index["arrays"].is_object())
        for (auto &item : index["arrays"].items()) names.push_back(item.key());
    return names;
}

} // namespace

int main(int argc, char **argv) {
    if (argc > 1 && std::string(argv[1]) == "torch-rng") return torch_rng_main(argc - 1, argv + 1);
    CLI::App app{"Recompute the stages of a golden case with Chatterbox Engine and write them as .npy files"};
    std::string case_path, inputs_dir, model_path, out_dir, only, device = "cpu";
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    app.add_option("--case", case_path, "case JSON (the \"case\" object of index.json, or index.json itself)")
        ->required()
        ->check(CLI::ExistingFile);
    app.add_option("--inputs", inputs_dir, "folder with the case's input files and recorded random inputs")
        ->required()
        ->check(CLI::ExistingDirectory);
    app.add_option("--model", model_path, "model: official folder (safetensors) or GGUF")
        ->required()
        ->check(CLI::ExistingPath);
    app.add_option("--out", out_dir, "output folder for <name>.npy")->required();
    app.add_option("--only", only, "run only the stages whose name contains this text");
    app.add_option("-t,--threads", threads, "CPU threads")->check(CLI::Range(1, 1024));
    app.add_option("--backend", device, "device the stages compute on: cpu or cuda (cpu)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    CLI11_PARSE(app, argc, argv);

    try {
        BackendOptions backend;
        backend.device = device;
        backend.threads = threads;
        // Parity is checked on the f32 products: the bf16 kernel (the flow's default where the CPU has
        // AVX-512 BF16) is bounded apart, in the flow's golden tests.
        backend.kernels.disable = {"onednn_bf16"};
        GoldenRun run(GoldenCase::load(case_path), inputs_dir, model_path, out_dir, backend);
        std::vector<std::string> ran, failed;
        for (const Stage &stage : all_stages()) {
            if (!only.empty() && stage.name.find(only) == std::string::npos) continue;
            std::fprintf(stderr, "stage %-24s ...", stage.name.c_str());
            try {
                stage.run(run);
                std::fprintf(stderr, " ok\n");
                ran.push_back(stage.name);
            } catch (const Error &e) {
                std::fprintf(stderr, " FAILED\n  %s\n", e.what());
                failed.push_back(stage.name);
            }
        }
        std::string missing;
        for (const std::string &name : golden_array_names(inputs_dir))
            if (!run.written().count(name) && !is_reference_only(name)) missing += " " + name;
        std::printf("stages run:%s\n", ran.empty() ? " none" : "");
        for (auto &s : ran) std::printf("  %s\n", s.c_str());
        std::printf("arrays written: %zu\n", run.written().size());
        if (!missing.empty()) std::printf("not implemented yet:%s\n", missing.c_str());
        if (!failed.empty()) {
            std::fprintf(stderr, "error: %zu stage(s) failed\n", failed.size());
            return 1;
        }
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
