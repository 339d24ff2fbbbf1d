// GPT-2 byte-level BPE (Turbo / Nano): the golden tokenizer cases of the official tokenizer files (ids from
// transformers, @huggingface/tokenizers and the reference GPT-2 encoder, all agreeing), the same files as a
// tokenizer.json, GPT-2's split pattern on whitespace and contractions, and bad files.

#include "core/error.h"
#include "support/test_support.h"
#include "text/bpe_tokenizer.h"
#include "text/punc_norm.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace chatterbox::text {
using test::expect_error;

namespace {

using nlohmann::json;
using Ids = std::vector<int32_t>;

json read_json(const std::string &path) {
    std::ifstream file(path);
    EXPECT_TRUE(file.good()) << path;
    return json::parse(file);
}

std::string turbo_folder() { return test::data_path("turbo/tokenizer"); }

const BpeTokenizer &turbo_tokenizer() {
    static const BpeTokenizer tokenizer = BpeTokenizer::from_folder(turbo_folder());
    return tokenizer;
}

int32_t id_of(const std::string &token) {
    const auto id = turbo_tokenizer().token_to_id(token);
    EXPECT_TRUE(id) << token;
    return id.value_or(-1);
}

// The official files rewritten as one tokenizer.json, as the `tokenizers` library saves GPT-2.
std::string write_tokenizer_json(const std::string &folder) {
    json merges = json::array();
    std::ifstream lines(turbo_folder() + "/merges.txt");
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line.rfind("#version", 0) != 0) merges.push_back(line);
    }
    json added = json::array();
    const json config = read_json(turbo_folder() + "/tokenizer_config.json");
    for (const auto &[id, token] : config["added_tokens_decoder"].items()) {
        json entry = token;
        entry["id"] = std::stoi(id);
        added.push_back(entry);
    }
    const json root = {
        {"version", "1.0"},
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
        {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"vocab", read_json(turbo_folder() + "/vocab.json")},
          {"merges", merges}}},
    };
    std::filesystem::create_directories(folder);
    std::ofstream(folder + "/tokenizer.json") << root.dump();
    return folder;
}

} // namespace

TEST(TextGpt2Tokenizer, MatchesTheGoldenCases) {
    const json cases = read_json(test::data_path("turbo/tokenizer_cases.json"));
    ASSERT_TRUE(cases["all_agree"].get<bool>());
    EXPECT_EQ(turbo_tokenizer().size(), cases["len_tokenizer"].get<size_t>());
    for (const auto &[tag, id] : cases["added_tokens"].items())
        EXPECT_EQ(turbo_tokenizer().token_to_id(tag), id) << tag;
    ASSERT_GE(cases["cases"].size(), 9u);
    for (const json &c : cases["cases"]) {
        const std::string normalised = punc_norm(c["text"].get<std::string>(), turbo_punctuation());
        EXPECT_EQ(normalised, c["punc_norm"].get<std::string>()) << c["text"];
        EXPECT_EQ(turbo_tokenizer().encode(normalised), c["ids"].get<Ids>()) << normalised;
    }
}

TEST(TextGpt2Tokenizer, TokenizerJsonGivesTheSameIds) {
    const BpeTokenizer from_json = BpeTokenizer::from_folder(write_tokenizer_json(test::temp_dir("gpt2_json")));
    EXPECT_EQ(from_json.size(), turbo_tokenizer().size());
    // Named: a range-for over a member of a temporary would read the temporary after its end.
    const json cases = read_json(test::data_path("turbo/tokenizer_cases.json"));
    for (const json &c : cases["cases"]) {
        EXPECT_EQ(from_json.encode(c["punc_norm"].get<std::string>()), c["ids"].get<Ids>()) << c["punc_norm"];
    }
}

TEST(TextGpt2Tokenizer, SplitPatternKeepsTheLastSpaceWithTheNextWord) {
    const int32_t newline = id_of("\u010A"), space = id_of("\u0120");
    // \s+(?!\S): a run of whitespace leaves its last character to the word after it.
    EXPECT_EQ(turbo_tokenizer().encode("Hello\n\nworld"), (Ids{id_of("Hello"), newline, newline, id_of("world")}));
    EXPECT_EQ(turbo_tokenizer().encode("Hello\n\n"), (Ids{id_of("Hello"), id_of("\u010A\u010A")}));
    EXPECT_EQ(turbo_tokenizer().encode("a   b"), (Ids{id_of("a"), space, space, id_of("\u0120b")}));
    EXPECT_EQ(turbo_tokenizer().encode(" "), (Ids{space}));
    // Contractions only where a match starts; letters, numbers and other characters are separate runs.
    EXPECT_EQ(turbo_tokenizer().encode("it's"), (Ids{id_of("it"), id_of("'s")}));
    EXPECT_EQ(turbo_tokenizer().encode("x2"), (Ids{id_of("x"), id_of("2")}));
    EXPECT_EQ(turbo_tokenizer().encode("!!"), (Ids{id_of("!!")}));
}

TEST(TextGpt2Tokenizer, UnknownTagsAndAnyCharacterAreSpokenAsText) {
    // Every byte has a character in the vocabulary, so nothing is ever unknown or dropped.
    const Ids tag = turbo_tokenizer().encode("[laughing]");
    EXPECT_GT(tag.size(), 1u);
    EXPECT_EQ(turbo_tokenizer().encode("[laugh]"), (Ids{id_of("[laugh]")}));
    std::mt19937 random(7);
    for (int round = 0; round < 200; ++round) {
        std::string text;
        for (int i = 0; i < 12; ++i) text += char(random() % 0x7F + 1);
        EXPECT_FALSE(turbo_tokenizer().encode(text).empty()) << text;
    }
}

TEST(TextGpt2Tokenizer, InvalidUtf8IsAnError) {
    expect_error([] { turbo_tokenizer().encode("abc\xFF"); }, "invalid UTF-8");
}

TEST(TextGpt2Tokenizer, BadFilesAreClearErrors) {
    const std::string empty = test::temp_dir("gpt2_empty");
    expect_error([&] { BpeTokenizer::from_folder(empty); }, "has neither tokenizer.json nor GPT-2's vocab.json");

    const std::string missing_byte = test::temp_dir("gpt2_missing_byte");
    std::ofstream(missing_byte + "/vocab.json") << R"({"a": 0, "b": 1})";
    std::ofstream(missing_byte + "/merges.txt") << "#version: 0.2\na b\n";
    expect_error([&] { BpeTokenizer::from_folder(missing_byte); }, {"ByteLevel character", "is missing"});

    const std::string bad_config = test::temp_dir("gpt2_bad_config");
    std::filesystem::copy(turbo_folder() + "/vocab.json", bad_config + "/vocab.json");
    std::filesystem::copy(turbo_folder() + "/merges.txt", bad_config + "/merges.txt");
    std::ofstream(bad_config + "/tokenizer_config.json") << R"({"added_tokens_decoder": {"x": {"content": "[a]"}}})";
    expect_error([&] { BpeTokenizer::from_folder(bad_config); }, "added_tokens_decoder key 'x' is not a token id");
}

} // namespace chatterbox::text
