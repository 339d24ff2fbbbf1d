#include "torch_rng.h"

#include "core/error.h"
#include "core/npy.h"
#include "core/torch_generator.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace chatterbox::golden {

namespace {

Shape shape_of(const nlohmann::json &draw) {
    Shape shape;
    for (const auto &d : draw.at("shape")) shape.push_back(d.get<int64_t>());
    return shape;
}

// One recorded draw's values from its seed, kind and shape alone (index.json "draws").
NpyArray draw_from_index(const nlohmann::json &draw) {
    const std::string kind = draw.at("kind");
    const Shape shape = shape_of(draw);
    const size_t n = size_t(shape_numel(shape));
    TorchGenerator rng(draw.at("seed").get<uint64_t>());
    if (kind == "rand") return NpyArray::from_f32(shape, rng.rand(n));
    if (kind == "randn") return NpyArray::from_f32(shape, rng.randn(n));
    if (kind == "rand_f64") {
        NpyArray out;
        out.descr = "<f8";
        out.shape = shape;
        std::vector<double> values(n);
        rng.rand(values.data(), n);
        out.data.resize(n * sizeof(double));
        std::memcpy(out.data.data(), values.data(), out.data.size());
        return out;
    }
    if (kind == "rand_then_randn") { // torch.rand(1, shape[1]) then torch.randn(shape), flat: HiFT's order
        if (shape.size() < 2) fail("draw ", draw.at("name").get<std::string>(), ": rand_then_randn needs 2+ dims");
        std::vector<float> values = rng.rand(size_t(shape[1]));
        const std::vector<float> normals = rng.randn(n);
        values.insert(values.end(), normals.begin(), normals.end());
        return NpyArray::from_f32({int64_t(values.size())}, values);
    }
    fail("draw ", draw.at("name").get<std::string>(), ": unknown kind \"", kind, "\"");
}

// One multinomial case: torch.manual_seed(seed), then torch.multinomial(row, 1) for each row.
NpyArray tokens_from_index(const nlohmann::json &c, const std::string &golden_dir) {
    const std::string name = c.at("name");
    const NpyArray probs = read_npy(golden_dir + "/" + name + "_probs.npy");
    if (probs.shape.size() != 2) fail(name, "_probs.npy: expected (steps, vocab), got ", probs.shape.size(), " dims");
    const size_t steps = size_t(probs.shape[0]), vocab = size_t(probs.shape[1]);
    const std::vector<float> rows = probs.f32();
    TorchGenerator rng(c.at("seed").get<uint64_t>());
    std::vector<int64_t> tokens;
    for (size_t s = 0; s < steps; ++s) tokens.push_back(rng.multinomial_one(rows.data() + s * vocab, vocab));
    return NpyArray::from_i64({int64_t(steps)}, tokens);
}

} // namespace

int torch_rng_main(int argc, char **argv) {
    CLI::App app{"Recompute a torch_rng golden set (index.json: multinomial cases and raw draws) from its seeds, "
                 "rows and shapes with the engine's TorchGenerator"};
    app.name("chatterbox-golden torch-rng");
    std::string golden_dir, out_dir;
    app.add_option("--golden", golden_dir, "folder with index.json and each multinomial case's NAME_probs.npy")
        ->required()
        ->check(CLI::ExistingDirectory);
    app.add_option("--out", out_dir, "output folder: NAME_tokens.npy per multinomial case, NAME.npy per draw")
        ->required();
    CLI11_PARSE(app, argc, argv);
    try {
        std::ifstream in(golden_dir + "/index.json");
        if (!in) fail(golden_dir, "/index.json: cannot open");
        const nlohmann::json index = nlohmann::json::parse(in);
        std::filesystem::create_directories(out_dir);
        size_t written = 0;
        for (const auto &c : index.value("multinomial", nlohmann::json::array())) {
            write_npy(out_dir + "/" + c.at("name").get<std::string>() + "_tokens.npy",
                      tokens_from_index(c, golden_dir));
            ++written;
        }
        for (const auto &draw : index.value("draws", nlohmann::json::array())) {
            write_npy(out_dir + "/" + draw.at("name").get<std::string>() + ".npy", draw_from_index(draw));
            ++written;
        }
        std::printf("arrays written: %zu\n", written);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

} // namespace chatterbox::golden
