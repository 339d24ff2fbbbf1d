// chatterbox-convert: the official Chatterbox model folder (or a GGUF) -> one GGUF file, with the
// chosen precision for weight matrices; or, with --synthetic, a folder of deterministic synthetic
// weights in the official format for tests and benchmarks; with --synthetic --tiny, a small GGUF of
// the same architecture (DIR/model.gguf) that loads and speaks in seconds.

#include "core/error.h"
#include "models/chatterbox/convert.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/synthetic_weights.h"
#include "text/bpe_tokenizer.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

// "0x5EEDC0DE" or "1592639710".
uint64_t parse_seed(const std::string &text) {
    const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    const std::string digits = hex ? text.substr(2) : text;
    if (digits.empty() || digits[0] == '-' || digits[0] == '+' || digits.find_first_of(" \t") != std::string::npos)
        chatterbox::fail("--seed: \"", text, "\" is not a number (decimal, or hex with 0x)");
    size_t used = 0;
    uint64_t value = 0;
    try {
        value = std::stoull(digits, &used, hex ? 16 : 10);
    } catch (const std::exception &) {
        used = 0;
    }
    if (used != digits.size())
        chatterbox::fail("--seed: \"", text, "\" is not a 64-bit number (decimal, or hex with 0x)");
    return value;
}

// Progress on stderr: one rewritten line on a terminal, otherwise a line per 10 %.
void report_progress(size_t index, size_t count, const std::string &name) {
    static const bool tty = isatty(fileno(stderr));
    if (tty) {
        std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", index + 1, count, name.c_str());
        if (index + 1 == count) std::fprintf(stderr, "\n");
    } else if ((index + 1) * 10 / count != index * 10 / count || index == 0) {
        std::fprintf(stderr, "[%zu/%zu] %s\n", index + 1, count, name.c_str());
    }
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{
        "Convert a Chatterbox model (official folder or GGUF) into one GGUF file.\n"
        "  chatterbox-convert MODEL_DIR -o model.gguf [--type f32|f16|q8_0|q4_k] [--components ve,t3,s3gen] "
        "[--t3-model v2|v3]\n"
        "  chatterbox-convert --synthetic [--variant english|multilingual|turbo|nano] [--tiny [--tokenizer DIR]] "
        "[--seed 0x5EEDC0DE] --out DIR"};
    std::string input, output, type_name = "f32", seed_text = "0x5EEDC0DE", variant_name = "english", tokenizer_dir;
    std::vector<std::string> components;
    bool synthetic = false, tiny = false;
    app.add_option("model", input,
                   "official model folder (ve/t3_cfg/s3gen .safetensors, tokenizer.json, conds.pt) "
                   "or a GGUF from chatterbox-convert");
    app.add_option("-o,--out,--output", output, "output GGUF file (or folder, with --synthetic)")->required();
    auto *type_opt = app.add_option("-t,--type", type_name, "type of the weight matrices: f32, f16, q8_0, q4_k")
                         ->capture_default_str();
    auto *components_opt =
        app.add_option("--components", components, "only these components (comma-separated: ve,t3,s3gen)")
            ->delimiter(',');
    std::string t3_model;
    auto *t3_model_opt =
        app.add_option("--t3-model", t3_model,
                       "which T3 of a multilingual folder to convert: v2 (default, as the official from_pretrained) "
                       "or v3")
            ->type_name("NAME");
    auto *synthetic_flag =
        app.add_flag("--synthetic", synthetic, "write synthetic weights (shared/golden/WEIGHTS.md rule) to --out");
    auto *tiny_flag = app.add_flag("--tiny", tiny,
                                   "with --synthetic: DIR/model.gguf, a tiny model of the variant's architecture with "
                                   "its tokenizer and a built-in voice")
                          ->needs(synthetic_flag);
    app.add_option("--tokenizer", tokenizer_dir,
                   "with --tiny: the folder of the variant's tokenizer files to embed (tokenizer.json, GPT-2's files, "
                   "or multilingual's grapheme_mtl_merged_expanded_v1.json and its Cangjie5_TC.json when there; "
                   "needed for all but English, whose is built in)")
        ->needs(tiny_flag);
    app.add_option("--seed", seed_text, "seed of the synthetic weights (decimal or 0x hex)")
        ->capture_default_str()
        ->needs(synthetic_flag);
    app.add_option("--variant", variant_name,
                   "with --synthetic: the official file set of this variant (english, multilingual, turbo, nano; "
                   "the tokenizer files and conds.pt are not written)")
        ->capture_default_str()
        ->needs(synthetic_flag);
    synthetic_flag->excludes(type_opt)->excludes(components_opt)->excludes(t3_model_opt);
    CLI11_PARSE(app, argc, argv);

    try {
        if (synthetic) {
            if (!input.empty()) chatterbox::fail("--synthetic takes no model argument (got ", input, ")");
            const uint64_t seed = parse_seed(seed_text);
            const chatterbox::Variant variant = chatterbox::parse_variant(variant_name);
            std::fprintf(stderr, "writing %s %s synthetic weights (seed 0x%llX) to %s\n", tiny ? "tiny" : "full-size",
                         variant_name.c_str(), static_cast<unsigned long long>(seed), output.c_str());
            if (tiny)
                chatterbox::synthetic::write_tiny_model(
                    output, seed, variant,
                    tokenizer_dir.empty() ? std::string() : chatterbox::official_tokenizer_json(tokenizer_dir, variant),
                    tokenizer_dir.empty() ? std::string()
                                          : chatterbox::folder_cangjie_json(tokenizer_dir).value_or(""));
            else
                chatterbox::synthetic::write_synthetic_model(output, seed, variant);
            return 0;
        }
        if (input.empty()) chatterbox::fail("no model given: chatterbox-convert MODEL_DIR -o model.gguf");
        chatterbox::ConvertOptions options;
        options.matrix_type = chatterbox::parse_matrix_type(type_name);
        options.components = components;
        options.t3_model = t3_model;
        options.progress = report_progress;
        std::fprintf(stderr, "converting %s -> %s (matrices %s)\n", input.c_str(), output.c_str(),
                     chatterbox::matrix_type_name(options.matrix_type).c_str());
        const chatterbox::ConvertSummary summary = chatterbox::convert_model(input, output, options);
        std::fprintf(stderr, "wrote %s\n%s", output.c_str(), summary.text().c_str());
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "chatterbox-convert: error: %s\n", e.what());
        return 1;
    }
}
