// BpeTokenizer / EnTokenizer: the reference fixtures (golden tokenizer.json, tokenizer_cases.json, index.json), HF
// tokenizers semantics on small hand-made tokenizers (expected ids worked out from the HF algorithm by hand), and
// robustness on hostile input.

#include "core/error.h"
#include "core/npy.h"
#include "support/test_support.h"
#include "text/bpe_tokenizer.h"
#include "text/punc_norm.h"
#include "text/unicode.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
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

const EnTokenizer &golden_tokenizer() {
    static const EnTokenizer tokenizer = EnTokenizer::from_file(test::golden_path("tokenizer.json"));
    return tokenizer;
}

int32_t id_of(const BpeTokenizer &tokenizer, const std::string &token) {
    const auto id = tokenizer.token_to_id(token);
    EXPECT_TRUE(id.has_value()) << token;
    return id.value_or(-1);
}

// A small tokenizer.json: vocab ids in list order, "[UNK]" first; `model_extra` / `root_extra` override fields.
json small_tokenizer_json(const std::vector<std::string> &tokens, const json &merges, const json &model_extra = {},
                          const json &root_extra = {}) {
    json vocab = json::object();
    vocab["[UNK]"] = 0;
    for (const std::string &token : tokens) vocab[token] = static_cast<int>(vocab.size());
    json model = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", "[UNK]"},
                  {"fuse_unk", false},
                  {"byte_fallback", false},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"vocab", vocab},
                  {"merges", merges}};
    if (model_extra.is_object()) model.update(model_extra);
    json root = {{"version", "1.0"},
                 {"truncation", nullptr},
                 {"padding", nullptr},
                 {"added_tokens", json::array()},
                 {"normalizer", nullptr},
                 {"pre_tokenizer", {{"type", "Whitespace"}}},
                 {"post_processor", nullptr},
                 {"decoder", nullptr},
                 {"model", model}};
    if (root_extra.is_object()) root.update(root_extra);
    return root;
}

BpeTokenizer small_tokenizer(const std::vector<std::string> &tokens, const json &merges, const json &model_extra = {},
                             const json &root_extra = {}) {
    return BpeTokenizer::from_json(small_tokenizer_json(tokens, merges, model_extra, root_extra).dump(), "small");
}

// Token strings of `ids`, for readable failures.
std::vector<std::string> names(const BpeTokenizer &tokenizer, const Ids &ids) {
    std::vector<std::string> out;
    for (int32_t id : ids) out.push_back(tokenizer.id_to_token(id).value_or("<bad id>"));
    return out;
}

// ---------------------------------------------------------------------------------------------- reference data

TEST(TextTokenizer, MatchesReferenceCases) {
    const EnTokenizer &tokenizer = golden_tokenizer();
    const auto cases = read_json(test::golden_path("tokenizer_cases.json"))["cases"];
    ASSERT_EQ(cases.size(), 5u);
    for (const auto &c : cases) {
        const std::string normalized = punc_norm(c["text"].get<std::string>());
        ASSERT_EQ(normalized, c["punc_norm"].get<std::string>());
        const Ids expected = c["ids_js"].get<Ids>();
        EXPECT_EQ(expected, c["ids_python_shim"].get<Ids>());
        const Ids ids = tokenizer.text_to_tokens(normalized);
        EXPECT_EQ(ids, expected) << normalized;
        EXPECT_EQ(tokenizer.bpe().encode(c["encoder_input"].get<std::string>()), expected);
        EXPECT_EQ(names(tokenizer.bpe(), ids), c["tokens_js"].get<std::vector<std::string>>());
    }
}

TEST(TextTokenizer, MatchesGoldenMainCase) {
    const auto index = read_json(test::golden_path("index.json"));
    const std::string normalized = punc_norm(index["text"].get<std::string>());
    ASSERT_EQ(normalized, index["text_normalized"].get<std::string>());
    const Ids ids = golden_tokenizer().text_to_tokens(normalized);
    EXPECT_EQ(ids, index["text_tokens_list"].get<Ids>());

    const NpyArray text_tokens = read_npy(test::golden_path("text_tokens.npy"));
    EXPECT_EQ(text_tokens.shape, (Shape{static_cast<int64_t>(ids.size())}));
    EXPECT_EQ(text_tokens.i64(), std::vector<int64_t>(ids.begin(), ids.end()));

    // T3 input: [START] + ids + [STOP], duplicated for classifier-free guidance.
    const Ids framed = t3_text_tokens(ids);
    const NpyArray t3_tokens = read_npy(test::golden_path("t3_text_tokens.npy"));
    ASSERT_EQ(t3_tokens.shape, (Shape{2, static_cast<int64_t>(framed.size())}));
    const std::vector<int64_t> rows = t3_tokens.i64();
    const std::vector<int64_t> expected_row(framed.begin(), framed.end());
    EXPECT_EQ(std::vector<int64_t>(rows.begin(), rows.begin() + rows.size() / 2), expected_row);
    EXPECT_EQ(std::vector<int64_t>(rows.begin() + rows.size() / 2, rows.end()), expected_row);
    EXPECT_EQ(framed.front(), 255);
    EXPECT_EQ(framed.back(), 0);
}

TEST(TextTokenizer, GoldenVocabularyLayout) {
    const BpeTokenizer &bpe = golden_tokenizer().bpe();
    EXPECT_EQ(id_of(bpe, "[STOP]"), 0);
    EXPECT_EQ(id_of(bpe, "[UNK]"), 1);
    EXPECT_EQ(id_of(bpe, "[SPACE]"), 2);
    EXPECT_EQ(id_of(bpe, "[START]"), 255);
    EXPECT_EQ(bpe.model_vocab_size(), 600u);
    EXPECT_EQ(bpe.id_to_token(255), "[START]");
    EXPECT_FALSE(bpe.id_to_token(600).has_value());
    EXPECT_FALSE(bpe.token_to_id("not a token").has_value());
}

TEST(TextTokenizer, T3FramingUsesGivenTokens) {
    EXPECT_EQ(t3_text_tokens({}), (Ids{255, 0}));
    EXPECT_EQ(t3_text_tokens({5, 6}, 1, 2), (Ids{1, 5, 6, 2}));
}

TEST(TextTokenizer, DecodeFollowsTheReference) {
    const EnTokenizer &tokenizer = golden_tokenizer();
    const std::string text = "Hello there! This is a quick test, with 42.";
    EXPECT_EQ(tokenizer.decode(tokenizer.text_to_tokens(text)), text);
    // [UNK] and [STOP] vanish; start framing ([START]) stays, as in the reference.
    EXPECT_EQ(tokenizer.decode(t3_text_tokens(tokenizer.text_to_tokens("a \U0001F600 b"))), "[START]a  b");
    expect_error([&] { tokenizer.decode({7, 600}); }, "id 600 at position 1 is not in the vocabulary");
    EXPECT_THROW(tokenizer.decode({-1}), Error);
}

// ------------------------------------------------------------------------------------------- hostile input

TEST(TextTokenizer, EmptyBlankAndWhitespace) {
    const EnTokenizer &tokenizer = golden_tokenizer();
    EXPECT_TRUE(tokenizer.text_to_tokens("").empty());
    EXPECT_EQ(tokenizer.text_to_tokens("   "), (Ids{2, 2, 2}));
    // Only ' ' becomes [SPACE]; other whitespace is dropped by the Whitespace pre-tokenizer.
    EXPECT_TRUE(tokenizer.text_to_tokens("\t\n\r\u3000").empty());
}

TEST(TextTokenizer, CharactersOutsideTheVocabularyBecomeUnk) {
    const EnTokenizer &tokenizer = golden_tokenizer();
    const BpeTokenizer &bpe = tokenizer.bpe();
    const int32_t unk = 1;
    EXPECT_EQ(tokenizer.text_to_tokens("\U0001F600\U0001F600"), (Ids{unk, unk})); // fuse_unk is false
    EXPECT_EQ(tokenizer.text_to_tokens("\u4F60\u597D"), (Ids{unk, unk}));
    EXPECT_EQ(tokenizer.text_to_tokens("\U0001F468\u200D\U0001F469"), (Ids{unk, unk, unk}));
    // A combining mark stays in its word (\w includes marks) and is unknown itself.
    EXPECT_EQ(tokenizer.text_to_tokens("e\u0301"), (Ids{id_of(bpe, "e"), unk}));
    EXPECT_EQ(tokenizer.text_to_tokens(std::string("a\0b", 3)), (Ids{id_of(bpe, "a"), unk, id_of(bpe, "b")}));
}

TEST(TextTokenizer, LongTextIsCompositionalAcrossSpaces) {
    const EnTokenizer &tokenizer = golden_tokenizer();
    const std::string sentence = "Hello there! This is a quick test of the engine, with numbers like 42.";
    const Ids sentence_ids = tokenizer.text_to_tokens(sentence);
    std::string text;
    Ids expected;
    while (text.size() < 10240) {
        text += sentence + " ";
        expected.insert(expected.end(), sentence_ids.begin(), sentence_ids.end());
        expected.push_back(2);
    }
    EXPECT_EQ(tokenizer.text_to_tokens(text), expected);
    // One 12 kB "word" (longer than the cache limit) still encodes, one [UNK] per character.
    std::string long_word;
    for (int i = 0; i < 3000; ++i) long_word += "\U0001F600";
    EXPECT_EQ(tokenizer.text_to_tokens(long_word), Ids(3000, 1));
}

TEST(TextTokenizer, InvalidUtf8IsAnErrorNotACrash) {
    const EnTokenizer &tokenizer = golden_tokenizer();
    expect_error([&] { tokenizer.text_to_tokens("ab\xC3"); }, "invalid UTF-8 at byte offset 2");
    EXPECT_THROW(tokenizer.text_to_tokens("\xED\xA0\x80"), Error);
    EXPECT_THROW(tokenizer.bpe().encode("\x80"), Error);
}

TEST(TextTokenizer, EverySingleByte) {
    const EnTokenizer &tokenizer = golden_tokenizer();
    const BpeTokenizer &bpe = tokenizer.bpe();
    std::string ascii;
    for (int byte = 0; byte < 256; ++byte) {
        const std::string text(1, static_cast<char>(byte));
        if (byte >= 0x80) {
            EXPECT_THROW(tokenizer.text_to_tokens(text), Error) << byte;
            continue;
        }
        ascii += text;
        const Ids ids = tokenizer.text_to_tokens(text);
        if (byte == ' ') {
            EXPECT_EQ(ids, Ids{2});
        } else if (is_regex_space(static_cast<char32_t>(byte))) {
            EXPECT_TRUE(ids.empty()) << byte;
        } else {
            EXPECT_EQ(ids, Ids{bpe.token_to_id(text).value_or(1)}) << byte;
        }
    }
    std::string all_bytes;
    for (int byte = 0; byte < 256; ++byte) all_bytes += static_cast<char>(byte);
    EXPECT_THROW(tokenizer.text_to_tokens(all_bytes), Error);
    const Ids ids = tokenizer.text_to_tokens(ascii);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);
    for (int32_t id : ids) EXPECT_TRUE(bpe.id_to_token(id).has_value());
}

TEST(TextTokenizer, RandomBytesNeverCrash) {
    const EnTokenizer &tokenizer = golden_tokenizer();
    const std::string alphabet[] = {"a",
                                    "b",
                                    "e",
                                    "r",
                                    "th",
                                    " ",
                                    "[",
                                    "]",
                                    "[SPACE]",
                                    "[ST",
                                    "OP]",
                                    "\xC3",
                                    "\xA9",
                                    "\xE2\x80",
                                    "\x9C",
                                    "\xF0\x9F\x98\x80",
                                    std::string(1, '\0'),
                                    "\xFF"};
    std::mt19937 rng(1234);
    int valid = 0;
    for (int iteration = 0; iteration < 3000; ++iteration) {
        std::string text;
        const int parts = static_cast<int>(rng() % 24);
        for (int i = 0; i < parts; ++i) text += alphabet[rng() % std::size(alphabet)];
        bool is_valid = true;
        try {
            validate_utf8(text, "fuzz");
        } catch (const Error &) {
            is_valid = false;
        }
        if (!is_valid) {
            EXPECT_THROW(tokenizer.text_to_tokens(text), Error);
            continue;
        }
        ++valid;
        const Ids ids = tokenizer.text_to_tokens(text);
        for (int32_t id : ids) ASSERT_TRUE(tokenizer.bpe().id_to_token(id).has_value());
        EXPECT_EQ(tokenizer.text_to_tokens(text), ids); // cached words give the same result
        EXPECT_NO_THROW(tokenizer.decode(ids));
    }
    EXPECT_GT(valid, 300);
    // Unbiased bytes: encoding succeeds exactly when the bytes are valid UTF-8.
    for (int iteration = 0; iteration < 2000; ++iteration) {
        std::string text(rng() % 12, '\0');
        for (char &byte : text) byte = static_cast<char>(rng() % 256);
        bool is_valid = true;
        try {
            validate_utf8(text, "fuzz");
        } catch (const Error &) {
            is_valid = false;
        }
        if (is_valid) {
            EXPECT_NO_THROW(tokenizer.text_to_tokens(text));
        } else {
            EXPECT_THROW(tokenizer.text_to_tokens(text), Error);
        }
    }
}

TEST(TextTokenizer, ConcurrentEncodingAgrees) {
    const EnTokenizer tokenizer = EnTokenizer::from_file(test::golden_path("tokenizer.json"));
    const std::string text = "Concurrent encoding of several different words: alpha, beta, gamma, delta.";
    const Ids expected = EnTokenizer::from_file(test::golden_path("tokenizer.json")).text_to_tokens(text);
    std::vector<Ids> results(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < results.size(); ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i) results[t] = tokenizer.text_to_tokens(text);
        });
    }
    for (std::thread &thread : threads) thread.join();
    for (const Ids &ids : results) EXPECT_EQ(ids, expected);
}

// ------------------------------------------------------------------------------- HF BPE model semantics

TEST(TextBpeModel, LowestRankMergesFirstRegardlessOfPosition) {
    const BpeTokenizer tokenizer = small_tokenizer({"a", "b", "c", "ab", "bc"}, {"b c", "a b"});
    EXPECT_EQ(names(tokenizer, tokenizer.encode("abc")), (std::vector<std::string>{"a", "bc"}));
}

TEST(TextBpeModel, EqualRanksMergeLeftmostFirst) {
    const BpeTokenizer tokenizer = small_tokenizer({"a", "aa"}, {"a a"});
    EXPECT_EQ(names(tokenizer, tokenizer.encode("aaa")), (std::vector<std::string>{"aa", "a"}));
    EXPECT_EQ(names(tokenizer, tokenizer.encode("aaaaa")), (std::vector<std::string>{"aa", "aa", "a"}));
}

TEST(TextBpeModel, MergesUnlockNewPairsOnBothSides) {
    const BpeTokenizer tokenizer =
        small_tokenizer({"a", "b", "c", "d", "bc", "abc", "abcd", "ab"}, {"b c", "a bc", "abc d", "a b"});
    EXPECT_EQ(names(tokenizer, tokenizer.encode("abcd")), (std::vector<std::string>{"abcd"}));
    EXPECT_EQ(names(tokenizer, tokenizer.encode("abab")), (std::vector<std::string>{"ab", "ab"}));
    EXPECT_EQ(names(tokenizer, tokenizer.encode("dabc")), (std::vector<std::string>{"d", "abc"}));
}

TEST(TextBpeModel, MergeListFormsAreEquivalent) {
    const std::vector<std::string> vocab = {"a", "b", "c", "ab", "abc"};
    const BpeTokenizer strings = small_tokenizer(vocab, {"#version: 0.2", "a b", "ab c"});
    const BpeTokenizer pairs = small_tokenizer(vocab, json::array({{"a", "b"}, {"ab", "c"}}));
    EXPECT_EQ(strings.encode("abcab"), pairs.encode("abcab"));
    EXPECT_EQ(names(pairs, pairs.encode("abcab")), (std::vector<std::string>{"abc", "ab"}));
}

TEST(TextBpeModel, UnknownCharactersSplitMergeablePairs) {
    const BpeTokenizer tokenizer = small_tokenizer({"a", "b", "ab"}, {"a b"});
    EXPECT_EQ(names(tokenizer, tokenizer.encode("a\u00E9b")), (std::vector<std::string>{"a", "[UNK]", "b"}));
    EXPECT_EQ(names(tokenizer, tokenizer.encode("ab\u00E9\u00E9")), (std::vector<std::string>{"ab", "[UNK]", "[UNK]"}));
    const BpeTokenizer fused = small_tokenizer({"a", "b", "ab"}, {"a b"}, {{"fuse_unk", true}});
    EXPECT_EQ(names(fused, fused.encode("ab\u00E9\u00E9b\u00E9")),
              (std::vector<std::string>{"ab", "[UNK]", "b", "[UNK]"}));
}

TEST(TextBpeModel, WhitespacePreTokenizerUsesUnicodeWordClass) {
    const BpeTokenizer tokenizer = small_tokenizer({"a", "\u00E9", "a\u00E9", "!", "?", "!?"}, {"a \u00E9", "! ?"});
    // "aé" is one word (Unicode \w), so the pair can merge; "a!?" splits into a word and a punctuation run.
    EXPECT_EQ(names(tokenizer, tokenizer.encode("a\u00E9 a!?")), (std::vector<std::string>{"a\u00E9", "a", "!?"}));
    const BpeTokenizer no_pre_tokenizer = small_tokenizer({"a", " "}, json::array(), {}, {{"pre_tokenizer", nullptr}});
    EXPECT_EQ(names(no_pre_tokenizer, no_pre_tokenizer.encode("a a")), (std::vector<std::string>{"a", " ", "a"}));
}

TEST(TextBpeModel, ContinuingSubwordPrefixAndEndOfWordSuffix) {
    const BpeTokenizer prefixed = small_tokenizer({"a", "##b", "##c", "ab", "abc", "b"}, {"a ##b", "ab ##c"},
                                                  {{"continuing_subword_prefix", "##"}});
    EXPECT_EQ(names(prefixed, prefixed.encode("abc bc")), (std::vector<std::string>{"abc", "b", "##c"}));
    const BpeTokenizer suffixed =
        small_tokenizer({"a", "b</w>", "ab</w>", "b"}, {"a b</w>"}, {{"end_of_word_suffix", "</w>"}});
    EXPECT_EQ(names(suffixed, suffixed.encode("ab ba")), (std::vector<std::string>{"ab</w>", "b", "[UNK]"}));
}

TEST(TextBpeModel, ByteFallbackAndIgnoreMerges) {
    const BpeTokenizer bytes =
        small_tokenizer({"a", "<0xC3>", "<0xA9>", "<0xE2>"}, json::array(), {{"byte_fallback", true}});
    // é = C3 A9 has byte tokens; € = E2 82 AC lacks two of them, so it becomes [UNK].
    EXPECT_EQ(names(bytes, bytes.encode("a\u00E9\u20AC")),
              (std::vector<std::string>{"a", "<0xC3>", "<0xA9>", "[UNK]"}));

    const std::vector<std::string> vocab = {"a", "b", "c", "ab", "abc"};
    const BpeTokenizer merging = small_tokenizer(vocab, {"a b"});
    EXPECT_EQ(names(merging, merging.encode("abc")), (std::vector<std::string>{"ab", "c"}));
    const BpeTokenizer whole = small_tokenizer(vocab, {"a b"}, {{"ignore_merges", true}});
    EXPECT_EQ(names(whole, whole.encode("abc")), (std::vector<std::string>{"abc"}));
}

// ---------------------------------------------------------------------------------------- added tokens

json added_token(const std::string &content, int id, const json &flags = json::object()) {
    json token = {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
                  {"rstrip", false}, {"normalized", false}, {"special", true}};
    if (flags.is_object()) token.update(flags);
    return token;
}

TEST(TextAddedTokens, LeftmostLongestMatchBeforeTheModel) {
    const json added = json::array({added_token("[A]", 10), added_token("[A]B", 11)});
    const BpeTokenizer tokenizer =
        small_tokenizer({"x", "y", "B", "[", "]", "A"}, json::array(), {}, {{"added_tokens", added}});
    EXPECT_EQ(tokenizer.encode("x[A]By[A]"), (Ids{1, 11, 2, 10}));
    // Literal specials inside text are matched too (as in the reference case "[START] literal ...").
    EXPECT_EQ(names(tokenizer, tokenizer.encode("[A")), (std::vector<std::string>{"[", "A"}));
}

TEST(TextAddedTokens, IdsComeFromTheModelVocabularyWhenPresent) {
    const json added = json::array({added_token("tok", 99), added_token("new", 50)});
    const BpeTokenizer tokenizer =
        small_tokenizer({"t", "o", "k", "tok"}, json::array(), {}, {{"added_tokens", added}});
    EXPECT_EQ(tokenizer.encode("tok new"), (Ids{4, 50}));
    EXPECT_EQ(tokenizer.id_to_token(50), "new");
    const json clashing = json::array({added_token("zz", 2)});
    expect_error(
        [&] {
            small_tokenizer({"t", "o"}, json::array(), {}, {{"added_tokens", clashing}});
        },
        "id 2 of 'zz' belongs to the vocabulary token 'o'");
    const json shared_id = json::array({added_token("<x>", 9), added_token("<y>", 9)});
    expect_error(
        [&] {
            small_tokenizer({"t"}, json::array(), {}, {{"added_tokens", shared_id}});
        },
        "id 9 is given to both '<x>' and '<y>'");
}

TEST(TextAddedTokens, StripFlagsAbsorbWhitespace) {
    // Without a pre-tokenizer, whitespace reaches the model and is visible as [UNK].
    const json no_pre = {{"pre_tokenizer", nullptr}};
    auto make = [&](const json &flags) {
        json root_extra = no_pre;
        root_extra["added_tokens"] = json::array({added_token("<m>", 20, flags)});
        return small_tokenizer({"a", "b"}, json::array(), {}, root_extra);
    };
    EXPECT_EQ(make({}).encode("a  <m>  b"), (Ids{1, 0, 0, 20, 0, 0, 2}));
    EXPECT_EQ(make({{"lstrip", true}}).encode("a  <m>  b"), (Ids{1, 20, 0, 0, 2}));
    EXPECT_EQ(make({{"rstrip", true}}).encode("a  <m>  b"), (Ids{1, 0, 0, 20, 2}));
    EXPECT_EQ(make({{"lstrip", true}, {"rstrip", true}}).encode("a \t<m>\u3000b"), (Ids{1, 20, 2}));
}

TEST(TextAddedTokens, SingleWordNeedsNonWordNeighbours) {
    const json added = json::array({added_token("cat", 30, {{"single_word", true}})});
    const BpeTokenizer tokenizer =
        small_tokenizer({"c", "a", "t", "s", "(", ")"}, json::array(), {}, {{"added_tokens", added}});
    EXPECT_EQ(tokenizer.encode("cat (cat)"), (Ids{30, 5, 30, 6}));
    EXPECT_EQ(tokenizer.encode("cats"), (Ids{1, 2, 3, 4}));
    EXPECT_EQ(tokenizer.encode("\u00E9cat"), (Ids{0, 1, 2, 3}));
}

TEST(TextAddedTokens, NonNormalizedTokensAreMatchedFirst) {
    const json added =
        json::array({added_token("ab", 40, {{"normalized", false}}), added_token("abc", 41, {{"normalized", true}}),
                     added_token("cd", 42, {{"normalized", true}})});
    const BpeTokenizer tokenizer = small_tokenizer({"a", "b", "c", "d"}, json::array(), {}, {{"added_tokens", added}});
    EXPECT_EQ(tokenizer.encode("abcd"), (Ids{40, 42}));
    EXPECT_EQ(tokenizer.encode("xabc"), (Ids{0, 40, 3}));
}

// ------------------------------------------------------------------------------------ loading errors

TEST(TextTokenizerLoading, RejectsUnsupportedComponentsByName) {
    const std::vector<std::string> vocab = {"a"};
    const json empty = json::array();
    expect_error(
        [&] {
            small_tokenizer(vocab, empty, {}, {{"normalizer", {{"type", "NFKC"}}}});
        },
        "normalizer of type 'NFKC' is not supported");
    expect_error(
        [&] {
            small_tokenizer(vocab, empty, {}, {{"pre_tokenizer", {{"type", "Metaspace"}}}});
        },
        "pre_tokenizer of type 'Metaspace' is not supported");
    expect_error(
        [&] {
            small_tokenizer(vocab, empty, {}, {{"post_processor", {{"type", "TemplateProcessing"}}}});
        },
        "post_processor of type 'TemplateProcessing'");
    expect_error([&] { small_tokenizer(vocab, empty, {}, {{"truncation", {{"max_length", 8}}}}); }, "truncation");
    expect_error(
        [&] {
            small_tokenizer(vocab, empty, {{"type", "WordPiece"}});
        },
        "model.type \"WordPiece\" is not supported");
    expect_error([&] { small_tokenizer(vocab, empty, {{"dropout", 0.1}}); }, "model.dropout 0.1");
}

TEST(TextTokenizerLoading, RejectsInconsistentModels) {
    expect_error([] { small_tokenizer({"a", "b"}, {"a b"}); }, "'ab' is not in the vocabulary");
    expect_error([] { small_tokenizer({"a"}, {"a x"}); }, "'x' is not in the vocabulary");
    expect_error([] { small_tokenizer({"a", "aa"}, {"a a a"}); }, "merges[0]: expected \"left right\"");
    expect_error([] { small_tokenizer({"a"}, json::array({42})); }, "merges[0]");
    expect_error(
        [] {
            small_tokenizer({"a"}, json::array(), {{"unk_token", "<unk>"}});
        },
        "unk_token '<unk>' is not in the vocabulary");
    expect_error([] { small_tokenizer({"a"}, json::array(), {{"unk_token", nullptr}}); }, "unk_token");
    json duplicate_ids = small_tokenizer_json({"a"}, json::array());
    duplicate_ids["model"]["vocab"]["b"] = 1;
    expect_error([&] { BpeTokenizer::from_json(duplicate_ids.dump(), "dup"); }, "id 1 is given to both");
    expect_error([] { BpeTokenizer::from_json("{\"model\": ", "broken.json"); }, "broken.json: invalid JSON");
    expect_error([] { BpeTokenizer::from_json("[]", "array.json"); }, "array.json: expected a JSON object");
    expect_error([] { BpeTokenizer::from_file("/nonexistent/tokenizer.json"); },
                 "cannot open '/nonexistent/tokenizer.json'");
}

TEST(TextTokenizerLoading, EnTokenizerNeedsStartAndStop) {
    expect_error([] { EnTokenizer(small_tokenizer({"a", "[STOP]"}, json::array())); }, "no '[START]' token");
    const json with_decoder = {{"decoder", {{"type", "BPEDecoder"}}}};
    const EnTokenizer tokenizer(small_tokenizer({"a", "[START]", "[STOP]"}, json::array(), {}, with_decoder));
    EXPECT_EQ(tokenizer.text_to_tokens("a"), Ids{1});
    expect_error([&] { tokenizer.decode({1}); }, "decoder of type 'BPEDecoder' is not supported");
}

} // namespace
} // namespace chatterbox::text
