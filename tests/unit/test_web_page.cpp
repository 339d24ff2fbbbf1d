// The web page's server side without a model (src/server/web_page.h): the files compiled in are the
// sources under web/ byte for byte, and /web/parameters.json gives the page the shared table's
// ranges and what the request parser accepts. (The page itself runs in tests/js/web_page.test.mjs.)

#include "server/embedded_files.h"
#include "server/web_page.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace chatterbox;
using namespace chatterbox::server;
using nlohmann::json;

namespace {

const std::filesystem::path kWebSources = std::filesystem::path(CHATTERBOX_TEST_DATA) / ".." / ".." / "web";

std::string read_file(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
}

TEST(WebPage, EmbeddedFilesAreTheSourcesByteForByte) {
    size_t sources = 0;
    for (const auto &entry : std::filesystem::directory_iterator(kWebSources)) {
        ++sources;
        const std::string name = entry.path().filename().string();
        const auto embedded = std::find_if(kEmbeddedFiles.begin(), kEmbeddedFiles.end(),
                                           [&](const EmbeddedFile &file) { return name == file.path; });
        ASSERT_NE(embedded, kEmbeddedFiles.end()) << name << " is not compiled in";
        EXPECT_EQ(embedded->bytes(), read_file(entry.path())) << name;
    }
    EXPECT_EQ(kEmbeddedFiles.size(), sources);
    for (const char *needed : {"index.html", "app.js", "style.css"})
        EXPECT_TRUE(std::any_of(kEmbeddedFiles.begin(), kEmbeddedFiles.end(), [&](const EmbeddedFile &file) {
            return std::string(file.path) == needed;
        })) << needed;
}

TEST(WebPage, ParametersAreTheSharedTable) {
    const json info = json::parse(web_page_parameters_json(RequestLimits{}));
    const json &listed = info.at("parameters");
    // The table, then OpenAI's speed where the table lacks it.
    ASSERT_EQ(listed.size(), synthesis_parameters().size() + (find_synthesis_parameter("speed") ? 0 : 1));
    for (size_t i = 0; i < synthesis_parameters().size(); ++i) {
        const SynthesisParameter &p = synthesis_parameters()[i];
        EXPECT_EQ(listed[i].at("name"), p.name);
        EXPECT_EQ(listed[i].at("min"), p.lo) << p.name;
        EXPECT_EQ(listed[i].at("max"), p.hi) << p.name;
        EXPECT_EQ(listed[i].at("min_excluded"), p.lo_excluded) << p.name;
        EXPECT_EQ(listed[i].at("flag"), p.flag != nullptr) << p.name;
        EXPECT_EQ(listed[i].at("default").get<double>(), p.default_value()) << p.name;
        EXPECT_TRUE(p.accepts(listed[i].at("default").get<double>())) << p.name;
    }
}

TEST(WebPage, FormatsSpeedAndInputLimitAreWhatTheParserAccepts) {
    RequestLimits limits;
    limits.max_input_chars = 123;
    const json info = json::parse(web_page_parameters_json(limits));
    EXPECT_EQ(info.at("max_input_chars"), 123);
    const auto formats = info.at("response_formats").get<std::vector<std::string>>();
    // The page streams pcm and plays it; wav is the default download.
    for (const char *needed : {"pcm", "wav"})
        EXPECT_NE(std::find(formats.begin(), formats.end(), needed), formats.end()) << needed;
    for (const std::string &format : formats)
        EXPECT_NO_THROW(parse_speech_request(
            json{{"input", "a"}, {"voice", "default"}, {"response_format", format}}.dump(), limits))
            << format;
    const json &parameters = info.at("parameters");
    const auto speed =
        std::find_if(parameters.begin(), parameters.end(), [](const json &p) { return p.at("name") == "speed"; });
    ASSERT_NE(speed, parameters.end());
    const double slowest = speed->at("min"), fastest = speed->at("max");
    EXPECT_LE(slowest, 1.0);
    EXPECT_GE(fastest, 1.0);
    for (const double speed : {slowest, fastest})
        EXPECT_NO_THROW(
            parse_speech_request(json{{"input", "a"}, {"voice", "default"}, {"speed", speed}}.dump(), limits))
            << speed;
}

} // namespace
