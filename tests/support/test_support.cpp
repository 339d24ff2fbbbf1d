#include "support/test_support.h"

#include "core/error.h"
#include "core/npy.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace chatterbox::test {

std::string data_path(const std::string &name) { return std::string(CHATTERBOX_TEST_DATA) + "/" + name; }
std::string golden_path(const std::string &name) { return data_path("golden/" + name); }
std::string turbo_golden_path(const std::string &name) { return data_path("turbo/" + name); }
std::string synthetic_dir() { return CHATTERBOX_SYNTHETIC_DIR; }
std::string turbo_synthetic_dir() { return CHATTERBOX_TURBO_SYNTHETIC_DIR; }
std::string mtl_synthetic_dir() { return CHATTERBOX_MTL_SYNTHETIC_DIR; }
std::string nano_synthetic_dir() { return CHATTERBOX_NANO_SYNTHETIC_DIR; }
namespace {

// A fresh folder (one per test process) of the checkpoint files of weights_dir, linked (they are
// gigabytes), and copies of the small files the official folder has beside them.
std::string linked_model_dir(const std::string &tag, const std::string &weights_dir,
                             std::initializer_list<const char *> checkpoints, const std::vector<std::string> &copies) {
    namespace fs = std::filesystem;
    const fs::path d = fs::temp_directory_path() / "chatterbox-tests" / (tag + "-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    for (const char *f : checkpoints) fs::create_symlink(fs::absolute(fs::path(weights_dir) / f), d / f);
    for (const std::string &file : copies) fs::copy_file(file, d / fs::path(file).filename());
    return d.string();
}

// A GPT-2 variant's official folder: its checkpoints and the Turbo golden set's tokenizer and conds.pt.
std::string gpt2_model_dir(const std::string &tag, const std::string &weights_dir, const char *t3_file) {
    std::vector<std::string> copies = {turbo_golden_path("conds.pt")};
    for (const auto &entry : std::filesystem::directory_iterator(turbo_golden_path("tokenizer")))
        copies.push_back(entry.path().string());
    return linked_model_dir(tag, weights_dir, {"ve.safetensors", t3_file, "s3gen_meanflow.safetensors"}, copies);
}

} // namespace

std::string synthetic_model_dir() {
    static const std::string dir = linked_model_dir("synthetic-model", synthetic_dir(),
                                                    {"ve.safetensors", "t3_cfg.safetensors", "s3gen.safetensors"},
                                                    {golden_path("tokenizer.json")});
    return dir;
}

std::string turbo_model_dir() {
    static const std::string dir = gpt2_model_dir("turbo-model", turbo_synthetic_dir(), "t3_turbo_v1.safetensors");
    return dir;
}

std::string nano_model_dir() {
    static const std::string dir = gpt2_model_dir("nano-model", nano_synthetic_dir(), "t3_nano_v1.safetensors");
    return dir;
}

std::string mtl_model_dir() {
    static const std::string dir = linked_model_dir(
        "mtl-model", mtl_synthetic_dir(), {"ve.safetensors", "t3_mtl23ls_v3.safetensors", "s3gen.safetensors"},
        {mtl_golden_path("grapheme_mtl_merged_expanded_v1.json"), mtl_golden_path("conds.pt")});
    return dir;
}

std::string tiny_model_path() { return CHATTERBOX_TINY_MODEL; }
std::string tiny_turbo_model_path() { return CHATTERBOX_TINY_TURBO_MODEL; }
std::string tiny_nano_model_path() { return CHATTERBOX_TINY_NANO_MODEL; }
std::string tiny_multilingual_model_path() { return CHATTERBOX_TINY_MULTILINGUAL_MODEL; }
std::string mtl_golden_path(const std::string &name) { return data_path("mtl/" + name); }

std::string test_device() {
    const char *device = std::getenv("CHATTERBOX_TEST_BACKEND");
    return device && *device ? device : "cpu";
}

bool testing_on_gpu() { return test_device() != "cpu"; }

BackendOptions test_backend_options(int threads) {
    BackendOptions options;
    options.device = test_device();
    options.threads = threads;
    options.kernels.disable = {"onednn_bf16"};
    return options;
}

BackendOptions with_bf16_products(BackendOptions options) {
    auto &disabled = options.kernels.disable;
    disabled.erase(std::remove(disabled.begin(), disabled.end(), "onednn_bf16"), disabled.end());
    return options;
}

std::string test_device_missing() {
    const std::string device = test_device();
    if (device != "cuda" && device != "gpu") return ""; // the CPU, or a name Backend rejects loudly
    const std::string why = Backend::why_no_gpu();
    return why.empty() ? "" : "no GPU to test on: " + why;
}

namespace {

class SkipWithoutTestDevice : public ::testing::Environment {
  public:
    void SetUp() override {
        if (const std::string why = test_device_missing(); !why.empty()) GTEST_SKIP() << why;
    }
};
// Registered before main (gtest_main) runs the tests.
[[maybe_unused]] ::testing::Environment *const skip_without_test_device =
    ::testing::AddGlobalTestEnvironment(new SkipWithoutTestDevice);

} // namespace

std::string tool_path(const std::string &tool) { return std::string(CHATTERBOX_TOOLS_DIR) + "/" + tool; }

std::string temp_dir(const std::string &tag) {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string leaf = tag;
    if (info) leaf += std::string("-") + info->test_suite_name() + "-" + info->name();
    auto dir = std::filesystem::temp_directory_path() / "chatterbox-tests" / leaf;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir.string();
}

::testing::AssertionResult contains(const std::string &text, const std::string &part) {
    if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "\"" << part << "\" is not in:\n" << text;
}

namespace {
std::string shell_quoted(const std::string &text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string read_file_bytes(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
} // namespace

ToolRun run_tool(const std::string &tool, const std::vector<std::string> &args, const ToolInput &input) {
    const std::filesystem::path capture = temp_dir("run_tool");
    std::string command = input.cwd.empty() ? "env" : "cd " + shell_quoted(input.cwd) + " && env";
    for (const std::string &assignment : input.env) command += " " + shell_quoted(assignment);
    command += " " + shell_quoted(tool_path(tool));
    for (const std::string &arg : args) command += " " + shell_quoted(arg);
    command += " < " + shell_quoted(input.stdin_path) + " > " + shell_quoted((capture / "out").string()) + " 2> " +
               shell_quoted((capture / "err").string());
    // A shell of its own (not std::system) so that wait4 reports the peak memory of this run alone:
    // the shell's usage includes the tool's, which it waits for (or which it becomes).
    ToolRun run;
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
        ::_exit(127);
    }
    int status = 0;
    struct rusage usage {};
    if (pid < 0 || ::wait4(pid, &status, 0, &usage) != pid) return run;
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    run.max_rss_kb = usage.ru_maxrss;
    run.out = read_file_bytes(capture / "out");
    run.err = read_file_bytes(capture / "err");
    return run;
}

Diff compare(const std::vector<float> &actual, const std::vector<float> &expected) {
    Diff d;
    if (actual.size() != expected.size()) {
        d.max_abs = d.max_rel = INFINITY;
        return d;
    }
    for (size_t i = 0; i < actual.size(); ++i) {
        double err = std::fabs(double(actual[i]) - double(expected[i]));
        if (std::isnan(err)) err = INFINITY;
        if (err > d.max_abs) {
            d.max_abs = err;
            d.worst_index = i;
        }
        d.max_rel = std::max(d.max_rel, err / std::max(std::fabs(double(expected[i])), 1e-12));
    }
    return d;
}

bool Tolerance::accepts(const Diff &diff, double reference_max_abs) const {
    switch (kind) {
    case Kind::Exact:
        return diff.max_abs == 0;
    case Kind::Abs:
        return diff.max_abs <= value;
    case Kind::Rel:
        return diff.max_abs <= value * reference_max_abs;
    }
    return false;
}

std::string Tolerance::str() const {
    if (kind == Kind::Exact) return "exact";
    return std::to_string(value) + (kind == Kind::Abs ? " abs" : " rel");
}

Tolerance tolerance_in_index(const std::string &index_path, const std::string &array_name) {
    static std::map<std::string, nlohmann::json> indexes;
    static std::mutex indexes_mutex;
    const std::lock_guard<std::mutex> lock(indexes_mutex);
    auto found = indexes.find(index_path);
    if (found == indexes.end()) {
        std::ifstream in(index_path);
        found = indexes.emplace(index_path, nlohmann::json::parse(in)).first;
    }
    const auto &arrays = found->second.at("arrays");
    if (!arrays.contains(array_name)) throw std::runtime_error(index_path + " has no array " + array_name);
    const auto &tol = arrays[array_name]["tolerance"];
    Tolerance t;
    if (!tol.is_string()) throw std::runtime_error(array_name + " has no tolerance (it is not an output)");
    const std::string text = tol.get<std::string>();
    if (text.rfind("exact", 0) == 0) return t;
    size_t used = 0;
    t.value = std::stod(text, &used);
    const std::string rest = text.substr(used);
    if (rest.rfind(" abs", 0) == 0)
        t.kind = Tolerance::Kind::Abs;
    else if (rest.rfind(" rel", 0) == 0)
        t.kind = Tolerance::Kind::Rel;
    else
        throw std::runtime_error("unreadable tolerance '" + text + "' for " + array_name);
    return t;
}

Tolerance golden_tolerance(const std::string &array_name) {
    return tolerance_in_index(golden_path("index.json"), array_name);
}

Tolerance turbo_golden_tolerance(const std::string &array_name) {
    return tolerance_in_index(turbo_golden_path("index.json"), array_name);
}

Tolerance mtl_golden_tolerance(const std::string &array_name) {
    return tolerance_in_index(mtl_golden_path("index.json"), array_name);
}

double max_magnitude(const std::vector<float> &values) {
    double m = 0;
    for (float x : values) m = std::max(m, double(std::fabs(x)));
    return m;
}

void expect_matches_golden(const std::vector<float> &actual, const std::vector<float> &expected,
                           const std::string &name) {
    expect_close(actual, expected, name, golden_tolerance(name));
}

void expect_matches_golden(const std::vector<float> &actual, const std::string &name) {
    expect_matches_golden(actual, read_npy(golden_path(name + ".npy")).f32(), name);
}

void expect_close(const std::vector<float> &actual, const std::vector<float> &expected, const std::string &name,
                  const Tolerance &tolerance) {
    ASSERT_EQ(actual.size(), expected.size()) << name;
    const Diff diff = compare(actual, expected);
    const double reference_max = max_magnitude(expected);
    std::printf("%-32s max abs %.3g  max rel %.3g  (tolerance %s, reference max %.3g)\n", name.c_str(), diff.max_abs,
                diff.max_rel, tolerance.str().c_str(), reference_max);
    EXPECT_TRUE(tolerance.accepts(diff, reference_max))
        << name << ": max abs " << diff.max_abs << " at " << diff.worst_index << ", tolerance " << tolerance.str();
}

void expect_matches_turbo_golden(const std::vector<float> &actual, const std::string &name) {
    expect_close(actual, read_npy(turbo_golden_path(name + ".npy")).f32(), name, turbo_golden_tolerance(name));
}

std::vector<int32_t> read_token_ids(const std::string &npy_path) {
    std::vector<int32_t> ids;
    for (int64_t id : read_npy(npy_path).i64()) {
        if (id < INT32_MIN || id > INT32_MAX) throw std::runtime_error(npy_path + ": a token id does not fit 32 bits");
        ids.push_back(int32_t(id));
    }
    return ids;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Tolerance abs_tolerance(double value) {
    Tolerance t;
    t.kind = Tolerance::Kind::Abs;
    t.value = value;
    return t;
}

std::vector<float> random_values(size_t n, uint64_t seed, float lo, float hi) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto &x : v) x = dist(rng);
    return v;
}

void expect_error(const std::function<void()> &action, std::initializer_list<std::string> fragments) {
    try {
        action();
        ADD_FAILURE() << "no Error thrown; expected one mentioning '" << *fragments.begin() << "'";
    } catch (const Error &e) {
        for (const std::string &fragment : fragments) EXPECT_TRUE(contains(e.what(), fragment));
    }
}

void expect_error(const std::function<void()> &action, const std::string &fragment) {
    expect_error(action, {fragment});
}

} // namespace chatterbox::test
