#pragma once
// Helpers shared by the tests: fixture paths and array comparisons.

#include "core/backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace chatterbox::test {

std::string data_path(const std::string &name);         // tests/data/<name>
std::string golden_path(const std::string &name);       // tests/data/golden/<name>
std::string turbo_golden_path(const std::string &name); // tests/data/turbo/<name> (the Turbo golden set)
std::string synthetic_dir();                            // full-size synthetic weights (ctest fixture)
std::string turbo_synthetic_dir();                      // full-size synthetic Turbo weights (ctest fixture)
std::string mtl_synthetic_dir();  // full-size synthetic multilingual weights (fixture multilingual_synthetic_weights)
std::string nano_synthetic_dir(); // full-size synthetic Nano weights (ctest fixture)
// A model folder of the synthetic weights (linked) and the golden tokenizer.json, no built-in voice.
std::string synthetic_model_dir();
// The same for Turbo: the synthetic checkpoints (linked), the golden GPT-2 tokenizer files and conds.pt.
std::string turbo_model_dir();
std::string nano_model_dir(); // ... and for Nano (Turbo's tokenizer files and conds.pt)
// The same for multilingual: ve, t3_mtl23ls_v3 and s3gen as safetensors (linked), the golden tokenizer,
// conds.pt.
std::string mtl_model_dir();
std::string tiny_model_path();              // the tiny synthetic model.gguf (ctest fixture tiny_model, seed 0x5EEDC0DE)
std::string tiny_turbo_model_path();        // tiny Turbo (GPT-2 T3, mean flow; fixture tiny_turbo_model)
std::string tiny_nano_model_path();         // the same architecture as variant nano (fixture tiny_nano_model)
std::string tiny_multilingual_model_path(); // tiny multilingual (fixture tiny_multilingual_model)
std::string mtl_golden_path(const std::string &name); // tests/data/mtl/<name> (the multilingual test data)
std::string tool_path(const std::string &tool);       // a built tool executable
std::string temp_dir(const std::string &tag);         // a fresh empty folder for this test

// The device the golden, pipeline and cross-backend tests compute on: $CHATTERBOX_TEST_BACKEND
// ("cuda" for the gpu-labelled ctest entries) or "cpu".
std::string test_device();
// Whether that device is a GPU. ggml's CUDA backend picks a product's kernel by its number of rows
// (f32 for up to 3, TF32 or f16 tensor cores for 4-16, cuBLAS beyond), so on it a batch and a request
// alone round differently: the batched-against-alone tests take the GPU's measured tolerances there.
bool testing_on_gpu();
// On test_device(), with f32 products only: the golden tolerances are for them, so the bf16 product
// (kernels/onednn.h; on by default for the flow where the CPU has AVX-512 BF16) is off; tests of it
// turn it back on (with_bf16_products) and hold it to its own bound.
BackendOptions test_backend_options(int threads);
BackendOptions with_bf16_products(BackendOptions options);
// Why test_device() cannot be used here ("" when it can). Every test program linked with this support
// library then skips all its tests with that reason (a gtest environment).
std::string test_device_missing();

// Runs a built tool through the shell with stdin from a file (not a terminal), capturing its output.
struct ToolRun {
    int exit_code = -1;
    std::string out, err; // stdout (bytes as written) and stderr
    long max_rss_kb = 0;  // the tool's peak resident memory (getrusage's ru_maxrss)
};
struct ToolInput {
    std::string stdin_path = "/dev/null";
    std::vector<std::string> env; // "NAME=value" set for the tool only
    std::string cwd;              // "" : the test's own
};
ToolRun run_tool(const std::string &tool, const std::vector<std::string> &args, const ToolInput &input = {});

struct Diff {
    double max_abs = 0;     // max |a - b|
    double max_rel = 0;     // max |a - b| / max(|b|, eps)
    size_t worst_index = 0; // where max_abs occurs
};
Diff compare(const std::vector<float> &actual, const std::vector<float> &expected);

// The tolerance index.json states for a golden array: "exact", "<x> abs" (max |a - b| <= x) or
// "<x> rel" (max |a - b| <= x * max |b|, relative to the reference's largest magnitude).
struct Tolerance {
    enum class Kind { Exact, Abs, Rel } kind = Kind::Exact;
    double value = 0;
    bool accepts(const Diff &diff, double reference_max_abs) const;
    std::string str() const;
};
// The tolerance of array_name in the index.json at index_path (each index read once).
Tolerance tolerance_in_index(const std::string &index_path, const std::string &array_name);
Tolerance golden_tolerance(const std::string &array_name);       // from tests/data/golden/index.json
Tolerance turbo_golden_tolerance(const std::string &array_name); // from tests/data/turbo/index.json
Tolerance mtl_golden_tolerance(const std::string &array_name);   // from tests/data/mtl/index.json

double max_magnitude(const std::vector<float> &values); // max |x|

// Expects `actual` to match `expected` within the index.json tolerance of golden array `name`
// and prints the error (the figures the issues' notes quote).
void expect_matches_golden(const std::vector<float> &actual, const std::vector<float> &expected,
                           const std::string &name);
// The same against tests/data/golden/<name>.npy.
void expect_matches_golden(const std::vector<float> &actual, const std::string &name);
// The same against the Turbo set: tests/data/turbo/<name>.npy within its index.json's tolerance.
void expect_matches_turbo_golden(const std::vector<float> &actual, const std::string &name);

// Expects the difference to meet tolerance (a "rel" one relative to the largest |expected|), printing
// the errors and the tolerance.
void expect_close(const std::vector<float> &actual, const std::vector<float> &expected, const std::string &name,
                  const Tolerance &tolerance);
Tolerance abs_tolerance(double value); // max |a - b| <= value

// Expects action to throw chatterbox::Error whose message holds every fragment (printing it otherwise).
void expect_error(const std::function<void()> &action, std::initializer_list<std::string> fragments);
void expect_error(const std::function<void()> &action, const std::string &fragment);

// EXPECT_TRUE(contains(message, "expected part")) prints the whole text when the part is missing.
::testing::AssertionResult contains(const std::string &text, const std::string &part);

// The ids of an integer .npy (i64 or i32) as the engine's token type.
std::vector<int32_t> read_token_ids(const std::string &npy_path);

// Wall seconds since start, for the timings the golden tests print.
double seconds_since(std::chrono::steady_clock::time_point start);

// Deterministic pseudo-random values in [lo, hi) for op tests.
std::vector<float> random_values(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

} // namespace chatterbox::test
