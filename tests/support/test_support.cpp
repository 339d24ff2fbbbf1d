#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

namespace chatterbox::test {

std::string data_path(const std::string &name) { return std::string(CHATTERBOX_TEST_DATA) + "/" + name; }
std::string golden_path(const std::string &name) { return data_path("golden/" + name); }
std::string synthetic_dir() { return CHATTERBOX_SYNTHETIC_DIR; }
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

std::vector<float> random_values(size_t n, uint64_t seed, float lo, float hi) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto &x : v) x = dist(rng);
    return v;
}

} // namespace chatterbox::test
