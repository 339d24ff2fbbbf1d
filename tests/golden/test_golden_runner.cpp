// needs: synthetic-weights
// chatterbox-golden on the main golden case: it must compute every array of index.json from the case
// alone (stages chained like the pipeline), each within index.json's tolerance, and no stage may fail.

#include "core/npy.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

using namespace chatterbox;
using namespace chatterbox::test;

namespace {

std::vector<float> values_of(const NpyArray &a) {
    if (a.descr == "<f4" || a.descr == "<f8") return a.f32();
    std::vector<float> v;
    for (int64_t x : a.i64()) v.push_back(float(x));
    return v;
}

} // namespace

TEST(GoldenRunner, MainCaseStagesMatchTheOfficialImplementation) {
    const std::string out = temp_dir("golden");
    const std::string log = out + "/run.log";
    const std::string cmd = tool_path("chatterbox-golden") + " --case " + golden_path("index.json") + " --inputs " +
                            golden_path("") + " --model " + synthetic_dir() + " --out " + out + "/arrays -t 2 > " +
                            log + " 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream in(log);
    const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(rc, 0) << output;
    std::printf("%s", output.c_str());

    int compared = 0;
    for (const auto &entry : std::filesystem::directory_iterator(out + "/arrays")) {
        const std::string name = entry.path().stem().string();
        const NpyArray actual = read_npy(entry.path().string());
        const NpyArray expected = read_npy(golden_path(name + ".npy"));
        ASSERT_EQ(actual.shape, expected.shape) << name;
        expect_matches_golden(values_of(actual), values_of(expected), name);
        ++compared;
    }
    std::printf("%d arrays compared\n", compared);

    // Everything but the recorded random draws and reference-run inputs/diagnostics must be computed.
    const std::set<std::string> recorded = {"flow_noise", "hift_phase_vec", "hift_sine_noise", "t3_tf_tokens",
                                            "t3_greedy_margin"};
    std::ifstream index_file(golden_path("index.json"));
    const nlohmann::json index = nlohmann::json::parse(index_file);
    for (const auto &item : index.at("arrays").items()) {
        if (recorded.count(item.key())) continue;
        EXPECT_TRUE(std::filesystem::exists(out + "/arrays/" + item.key() + ".npy"))
            << item.key() << " was not computed";
    }
}
