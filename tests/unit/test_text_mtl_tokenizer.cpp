// The multilingual text front end: every case of the golden tokenizer_cases.json exact (punc_norm,
// the encoder input, the ids), the Unicode steps (Python lower(), NFKD), the Korean, Japanese and
// Chinese steps against known decompositions, readings and word segmentations, and the language table's errors.

#include "core/error.h"
#include "support/test_support.h"
#include "text/cangjie.h"
#include "text/japanese_reading.h"
#include "text/languages.h"
#include "text/mtl_normalize.h"
#include "text/mtl_tokenizer.h"
#include "text/punc_norm.h"
#include "text/word_segmenter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace chatterbox::text {
using test::expect_error;

namespace {

nlohmann::json read_json(const std::string &path) {
    std::ifstream file(path);
    EXPECT_TRUE(file.good()) << path;
    return nlohmann::json::parse(file);
}

const MtlTokenizer &golden_tokenizer() {
    static const MtlTokenizer tokenizer(
        BpeTokenizer::from_file(test::data_path("mtl/grapheme_mtl_merged_expanded_v1.json")), std::nullopt);
    return tokenizer;
}

} // namespace

TEST(MtlTokenizer, EveryGoldenCaseIsExact) {
    const nlohmann::json cases = read_json(test::data_path("mtl/tokenizer_cases.json"))["cases"];
    ASSERT_GE(cases.size(), 12u);
    for (const auto &c : cases) {
        const std::string lang = c["lang"], text = c["text"];
        SCOPED_TRACE(lang + ": " + text);
        const std::string normalised = punc_norm(text, multilingual_punctuation());
        EXPECT_EQ(normalised, c["punc_norm"].get<std::string>());
        EXPECT_EQ(golden_tokenizer().encoder_input(normalised, lang), c["encoder_input"].get<std::string>());
        EXPECT_EQ(golden_tokenizer().text_to_tokens(normalised, lang), c["ids"].get<std::vector<int32_t>>());
    }
}

TEST(MtlTokenizer, LanguageCodesAreCaseInsensitiveAndTagged) {
    EXPECT_EQ(golden_tokenizer().encoder_input("Hi there.", "FR"), "[fr]hi[SPACE]there.");
    for (const Language &language : supported_languages()) {
        const std::vector<int32_t> ids = golden_tokenizer().text_to_tokens("a", language.code);
        ASSERT_FALSE(ids.empty());
        EXPECT_EQ(ids.front(), *golden_tokenizer().bpe().token_to_id(std::string("[") + language.code + "]"))
            << language.code;
    }
}

TEST(MtlTokenizer, UnsupportedLanguageListsTheSupportedOnes) {
    expect_error([] { golden_tokenizer().text_to_tokens("hola", "xx"); },
                 "unsupported language \"xx\" (supported: ar, da, de, el, en, es, fi, fr, he, hi, it, ja, ko, ms, nl, "
                 "no, pl, pt, ru, sv, sw, tr, zh)");
    expect_error([] { golden_tokenizer().text_to_tokens("hola", ""); }, "needs a language");
    expect_error([] { golden_tokenizer().text_to_tokens("hola", "e"); }, "unsupported language \"e\"");
}

TEST(MtlTokenizer, RefusesATokenizerWithoutLanguageTags) {
    expect_error([] { MtlTokenizer(BpeTokenizer::from_file(test::golden_path("tokenizer.json")), std::nullopt); },
                 "not a multilingual tokenizer");
}

TEST(Languages, TableHasTheTwentyThreeOfMtlTts) {
    EXPECT_EQ(supported_languages().size(), 23u);
    std::set<std::string> codes;
    for (const Language &language : supported_languages()) codes.insert(language.code);
    EXPECT_EQ(codes.size(), 23u);
    EXPECT_EQ(find_language("Ja").name, std::string("Japanese"));
    EXPECT_NE(language_list().find("zh (Chinese)"), std::string::npos);
}

TEST(MtlNormalize, PythonLowerFullMappingAndFinalSigma) {
    EXPECT_EQ(python_lower("ÀÉÎ ŒUVRE"), "àéî œuvre");
    EXPECT_EQ(python_lower("\u0130stanbul"), "i\u0307stanbul"); // İ: Python's one full lower mapping
    EXPECT_EQ(python_lower("ΣΑΣ ΟΔΟΣ."), "σας οδος.");          // final sigma before a space / a full stop
    EXPECT_EQ(python_lower("Σ"), "σ");                          // no cased letter before it
    EXPECT_EQ(python_lower("ΑΣ'Α"), "ασ'α");                    // ' is case-ignorable: the cased Α after it counts
    EXPECT_EQ(python_lower("ΑΣ'"), "ας'");
    EXPECT_EQ(python_lower("Ǆ"), "ǆ");
    expect_error([] { python_lower("\xff"); }, "invalid UTF-8");
}

TEST(MtlNormalize, NfkdDecomposesCompatibilityAndCanonical) {
    EXPECT_EQ(nfkd("é"), "e\u0301");
    EXPECT_EQ(nfkd("ﬁ①"), "fi1");
    EXPECT_EQ(nfkd("が"), "か\u3099");
    EXPECT_EQ(nfkd("한"), "\u1112\u1161\u11AB");
    expect_error([] { nfkd("\xc3"); }, "invalid UTF-8");
}

TEST(MtlNormalize, KoreanSyllablesAsConjoiningJamo) {
    // 한국어: ᄒ ᅡ ᆫ / ᄀ ᅮ ᆨ / ᄋ ᅥ (no final)
    EXPECT_EQ(korean_jamo(" 한국어 "), "\u1112\u1161\u11AB\u1100\u116E\u11A8\u110B\u1165");
    EXPECT_EQ(korean_jamo("가"), "\u1100\u1161");
    EXPECT_EQ(korean_jamo("abc"), "abc");
    // In the pipeline NFKD has already decomposed the syllables; the step leaves them and strips.
    EXPECT_EQ(golden_tokenizer().encoder_input("안녕 하세요.", "ko"),
              "[ko]\u110B\u1161\u11AB\u1102\u1167\u11BC[SPACE]\u1112\u1161\u1109\u1166\u110B\u116D.");
}

TEST(JapaneseReading, KanjiReadAsHiraganaKanaKept) {
    // The result is decomposed again (NFKD): じ = し + U+3099.
    EXPECT_EQ(japanese_hiragana("漢字"), nfkd("かんじ"));
    EXPECT_EQ(japanese_hiragana("東京"), "とうきょう");
    EXPECT_EQ(japanese_hiragana("食べる"), nfkd("たべる"));       // okurigana read with its kanji
    EXPECT_EQ(japanese_hiragana(nfkd("食べる")), nfkd("たべる")); // as the pipeline hands it: decomposed
    EXPECT_EQ(japanese_hiragana("日本語"), nfkd("にほんご"));     // the reading is decomposed again
    EXPECT_EQ(japanese_hiragana("カタカナとひらがな"), nfkd("カタカナとひらがな"));
    EXPECT_EQ(japanese_hiragana("部屋"), " へや"); // a reading starting with へ / は gets a space
    EXPECT_EQ(japanese_hiragana("花"), " はな");
    // KAKASI drops a phrase read past a small っ (登った -> た); the step reads up to it.
    EXPECT_EQ(japanese_hiragana("登った"), nfkd("のぼった"));
    EXPECT_EQ(japanese_hiragana("行ってきます"), nfkd("いってきます"));
    EXPECT_EQ(golden_tokenizer().encoder_input("東京です。", "ja"), "[ja]とうきょうて\u3099す。");
    expect_error([] { japanese_hiragana("\xe6\xbc"); }, "invalid UTF-8");
}

// Our readings of tests/data/mtl/japanese_readings.tsv exactly, and their agreement with pykakasi's
// (the reference's), which must not fall below the 220 of 244 README.md reports.
TEST(JapaneseReading, CorpusReadingsAndAgreementWithPykakasi) {
    std::ifstream file(test::data_path("mtl/japanese_readings.tsv"));
    ASSERT_TRUE(file.good());
    size_t lines = 0, agree = 0;
    for (std::string line; std::getline(file, line);) {
        if (line.empty() || line[0] == '#') continue;
        const size_t tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
        ASSERT_NE(tab2, std::string::npos) << line;
        const std::string text = line.substr(0, tab1);
        const std::string ours = japanese_hiragana(nfkd(python_lower(text)));
        EXPECT_EQ(ours, nfkd(line.substr(tab1 + 1, tab2 - tab1 - 1))) << text;
        agree += ours == nfkd(line.substr(tab2 + 1));
        ++lines;
    }
    EXPECT_EQ(lines, 244u);
    std::printf("identical to pykakasi: %zu of %zu\n", agree, lines);
    EXPECT_GE(agree, 220u);
}

TEST(Cangjie, CodesIndexesAndPassThrough) {
    const CangjieTable table = CangjieTable::from_json(R"(["日\ta", "曰\ta\textra", "明\tab", "你\tonf"])", "test");
    EXPECT_EQ(table.size(), 4u);
    EXPECT_EQ(table.encode("日"), "a");
    EXPECT_EQ(table.encode("曰"), "a1"); // second glyph of code "a"
    EXPECT_FALSE(table.encode("月").has_value());
    EXPECT_EQ(table.convert("你明日"), "[cj_o][cj_n][cj_f][cj_.][cj_a][cj_b][cj_.][cj_a][cj_.]");
    EXPECT_EQ(table.convert("曰 の, 月"), "[cj_a][cj_1][cj_.] の, 月"); // の: Lo without a code; 月: no entry
    expect_error([] { CangjieTable::from_json("{}", "c.json"); }, "c.json: expected a JSON array");
    expect_error([] { CangjieTable::from_json(R"(["日"])", "c.json"); }, "is not \"glyph\\tcode\"");
    expect_error([] { CangjieTable::from_json("[", "c.json"); }, "c.json: not JSON");
}

TEST(Cangjie, ChineseNeedsTheTable) {
    expect_error([] { golden_tokenizer().text_to_tokens("你好", "zh"); }, "Cangjie5_TC.json");
    EXPECT_EQ(golden_tokenizer().encoder_input("ok 42.", "zh"), "[zh]ok[SPACE]42."); // nothing to code
    const MtlTokenizer with_table(BpeTokenizer::from_file(test::data_path("mtl/grapheme_mtl_merged_expanded_v1.json")),
                                  CangjieTable::from_json(R"(["你\tonf", "好\tvnd"])", "test"));
    // The words (你好 / 。) joined by a space first, as tokenizer.py does with pkuseg.
    EXPECT_EQ(with_table.encoder_input("你好。", "zh"),
              "[zh][cj_o][cj_n][cj_f][cj_.][cj_v][cj_n][cj_d][cj_.][SPACE]。");
}

// jieba's segmentation (cppjieba with jieba's dictionary and HMM): the examples of jieba's README
// (accurate mode), one with a word the dictionary lacks (杭研, found by the HMM), and whitespace left out.
TEST(ChineseWords, JiebaSegmentsLikeJieba) {
    const WordSegmenter &jieba = chinese_segmenter();
    EXPECT_EQ(jieba.cut("我来到北京清华大学"), (std::vector<std::string>{"我", "来到", "北京", "清华大学"}));
    EXPECT_EQ(segmented("他来到了网易杭研大厦", jieba), "他 来到 了 网易 杭研 大厦");
    EXPECT_EQ(segmented("小明硕士毕业于中国科学院计算所，后在日本京都大学深造", jieba),
              "小明 硕士 毕业 于 中国科学院 计算所 ， 后 在 日本京都大学 深造");
    EXPECT_EQ(segmented("  我 来到  北京 ", jieba), "我 来到 北京");
    EXPECT_EQ(segmented("", jieba), "");
    // Through the tokenizer: the spaces between words become [SPACE] (no Cangjie table: nothing coded).
    EXPECT_EQ(golden_tokenizer().encoder_input("hello world 42", "zh"), "[zh]hello[SPACE]world[SPACE]42");
    // Every character comes back, whatever the script (CJK extension B, emoji, a combining accent).
    const std::string mixed = "\U00020000\U0001F600ok\u0301 北京2024年\t\u3002";
    std::string joined;
    for (const std::string &word : jieba.cut(mixed)) joined += word;
    std::string compact = mixed;
    compact.erase(std::remove_if(compact.begin(), compact.end(), [](char c) { return c == ' ' || c == '\t'; }),
                  compact.end());
    EXPECT_EQ(joined, compact);
    expect_error([] { jieba_segmenter("/nonexistent"); }, "/nonexistent/jieba.dict.utf8");
}

} // namespace chatterbox::text
