// needs: synthetic-weights turbo-synthetic-weights multilingual-synthetic-weights
// chatterbox-golden on each golden case (English, Turbo, multilingual): it must compute every array of the set's
// index.json from the case alone (stages chained like the pipeline), each within index.json's
// tolerance, and no stage may fail.

#include "core/npy.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace chatterbox;
using namespace chatterbox::test;

namespace {

std::vector<float> values_of(const NpyArray &a) {
    if (a.descr == "<f4" || a.descr == "<f8") return a.f32();
    std::vector<float> v;
    for (int64_t x : a.i64()) v.push_back(float(x));
    return v;
}

// Processed logits hold -inf where a filter dropped a token: the finite entries must agree, and the
// kept sets may differ only at a filter's boundary, a rare event (at most one token per step).
void expect_finite_entries_close(const std::vector<float> &actual, const std::vector<float> &expected,
                                 const std::string &name, const Tolerance &tolerance, int64_t steps) {
    ASSERT_EQ(actual.size(), expected.size()) << name;
    double max_error = 0;
    int64_t kept_differently = 0;
    for (size_t i = 0; i < actual.size(); ++i) {
        if (std::isfinite(actual[i]) && std::isfinite(expected[i]))
            max_error = std::max(max_error, double(std::fabs(actual[i] - expected[i])));
        else if (std::isfinite(actual[i]) != std::isfinite(expected[i]))
            ++kept_differently;
    }
    std::printf("%-32s max abs %.3g on kept tokens, %lld kept on one side only (tolerance %s)\n", name.c_str(),
                max_error, static_cast<long long>(kept_differently), tolerance.str().c_str());
    EXPECT_TRUE(tolerance.accepts(Diff{max_error, 0, 0}, max_magnitude(expected))) << name;
    EXPECT_LE(kept_differently, steps) << name;
}

// Runs chatterbox-golden on the set in set_dir (its index.json is the case) with model; compares
// every array the set records and expects every one but its recorded inputs to be computed.
void expect_case_matches(const std::string &set_dir, const std::string &model, const std::string &label) {
    const std::string out = temp_dir("golden-" + label);
    const ToolRun run = run_tool("chatterbox-golden", {"--case", set_dir + "/index.json", "--inputs", set_dir,
                                                       "--model", model, "--out", out + "/arrays", "-t", "2",
                                                       "--backend", test_device()});
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    std::printf("%s%s", run.out.c_str(), run.err.c_str());

    std::ifstream index_file(set_dir + "/index.json");
    const nlohmann::json index = nlohmann::json::parse(index_file);
    const std::string index_path = set_dir + "/index.json";
    int compared = 0;
    for (const auto &item : index.at("arrays").items()) {
        const std::string name = item.key();
        const std::string path = out + "/arrays/" + name + ".npy";
        const nlohmann::json &stated = item.value().at("tolerance");
        const std::string text = stated.is_string() ? stated.get<std::string>() : "informative";
        // The recorded random draws and the reference run's own diagnostics are inputs, not results.
        if (text.rfind("exact (input)", 0) == 0 || text == "informative" || name == "t3_tf_tokens") continue;
        if (!std::filesystem::exists(path)) {
            ADD_FAILURE() << label << ": " << name << " was not computed";
            continue;
        }
        const NpyArray actual = read_npy(path), expected = read_npy(set_dir + "/" + name + ".npy");
        ASSERT_EQ(actual.shape, expected.shape) << name;
        const Tolerance tolerance = tolerance_in_index(index_path, name);
        if (text.find("on finite entries") != std::string::npos)
            expect_finite_entries_close(values_of(actual), values_of(expected), name, tolerance, expected.shape[0]);
        else
            expect_close(values_of(actual), values_of(expected), name, tolerance);
        ++compared;
    }
    std::printf("%s: %d arrays compared\n", label.c_str(), compared);
}

} // namespace

TEST(GoldenRunner, MainCaseStagesMatchTheOfficialImplementation) {
    expect_case_matches(golden_path(""), synthetic_dir(), "english");
}

TEST(GoldenRunner, TurboCaseStagesMatchTheOfficialImplementation) {
    expect_case_matches(turbo_golden_path(""), turbo_model_dir(), "turbo");
}

TEST(GoldenRunner, MultilingualCaseStagesMatchTheOfficialImplementation) {
    expect_case_matches(mtl_golden_path(""), mtl_model_dir(), "multilingual");
}

TEST(GoldenRunner, CaseMistakesAreNamed) {
    const std::string dir = temp_dir("golden-case-errors");
    const auto run_case = [&](const nlohmann::json &golden_case) {
        const std::string path = dir + "/case.json";
        std::ofstream(path) << golden_case.dump();
        return run_tool("chatterbox-golden", {"--case", path, "--inputs", golden_path(""), "--model", synthetic_dir(),
                                              "--out", dir + "/arrays", "--only", "voice"});
    };
    std::ifstream index_file(golden_path("index.json"));
    const nlohmann::json english = nlohmann::json::parse(index_file).at("case");

    nlohmann::json misspelt = english;
    misspelt["generate_kwargs"] = {{"temprature", 0.7}};
    ToolRun run = run_case(misspelt);
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.err.find("unknown generation parameter 'temprature'"), std::string::npos) << run.err;

    nlohmann::json out_of_range = english;
    out_of_range["cfg_weight"] = 7;
    run = run_case(out_of_range);
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.err.find("cfg_weight"), std::string::npos) << run.err;

    nlohmann::json other_variant = english;
    other_variant["variant"] = "turbo";
    run = run_case(other_variant);
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.err.find("the case is for the turbo variant"), std::string::npos) << run.err;
}
