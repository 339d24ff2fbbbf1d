// punc_norm (tts.py) and the Unicode helpers it rests on. Expected values come from the reference fixtures or from
// Python 3.11 semantics (str.isspace / islower / upper, checked exhaustively against CPython during development).

#include "core/error.h"
#include "support/test_support.h"
#include "text/punc_norm.h"
#include "text/unicode.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace chatterbox::text {
namespace {

nlohmann::json read_json(const std::string &path) {
    std::ifstream file(path);
    EXPECT_TRUE(file.good()) << path;
    return nlohmann::json::parse(file);
}

TEST(TextUnicode, PythonWhitespaceIncludesInformationSeparators) {
    for (char32_t c : {0x09, 0x0A, 0x0B,   0x0C,   0x0D,   0x1C,   0x1D,   0x1E,   0x1F,   0x20,
                       0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}) {
        EXPECT_TRUE(is_python_space(c)) << std::hex << uint32_t(c);
    }
    for (char32_t c : {0x00, 0x08, 0x0E, 0x41, 0x180E, 0x200B, 0xFEFF, 0x110000}) {
        EXPECT_FALSE(is_python_space(c)) << std::hex << uint32_t(c);
    }
}

TEST(TextUnicode, PythonUpperUsesFullCaseMappingForLowercaseOnly) {
    EXPECT_EQ(python_upper_if_lower(U'a'), "A");
    EXPECT_EQ(python_upper_if_lower(U'é'), "É");
    EXPECT_EQ(python_upper_if_lower(U'ß'), "SS");
    EXPECT_EQ(python_upper_if_lower(0xFB03), "FFI");                // ﬃ
    EXPECT_EQ(python_upper_if_lower(0x0390), "\u0399\u0308\u0301"); // ΐ
    EXPECT_EQ(python_upper_if_lower(0x1FB3), "\u0391\u0399");       // ᾳ
    EXPECT_EQ(python_upper_if_lower(0x01C6), "\u01C4");             // ǆ -> Ǆ
    EXPECT_EQ(python_upper_if_lower(0x01C5), "\u01C5");             // ǅ is titlecase, not lowercase
    EXPECT_EQ(python_upper_if_lower(0x24D0), "\u24B6");             // ⓐ (Other_Lowercase) -> Ⓐ
    EXPECT_EQ(python_upper_if_lower(0x0345), "\u0399");             // combining ypogegrammeni
    EXPECT_EQ(python_upper_if_lower(0x00AA), "\u00AA");             // ª is lowercase but has no upper case
    EXPECT_EQ(python_upper_if_lower(U'A'), "A");
    EXPECT_EQ(python_upper_if_lower(U'1'), "1");
    EXPECT_EQ(python_upper_if_lower(0x1F600), "\U0001F600");
}

TEST(TextUnicode, RegexWordAndSpaceClassesAreUnicodeAware) {
    for (char32_t c : {0x61, 0x5A, 0x5F, 0x37, 0xE9, 0x4F60, 0x0436, 0x0301, 0x0663, 0x2160, 0x200D, 0x24B6, 0x1F130}) {
        EXPECT_TRUE(is_regex_word(c)) << std::hex << uint32_t(c);
    }
    for (char32_t c : {0x21, 0x2D, 0x20, 0x00B2, 0x00BD, 0x1F600, 0x2026, 0x0000, 0x110000}) {
        EXPECT_FALSE(is_regex_word(c)) << std::hex << uint32_t(c);
    }
    for (char32_t c : {0x09, 0x0D, 0x20, 0x85, 0xA0, 0x2028, 0x3000}) EXPECT_TRUE(is_regex_space(c));
    for (char32_t c : {0x1C, 0x1F, 0x200B, 0x180E, 0x41}) EXPECT_FALSE(is_regex_space(c));
}

TEST(TextUnicode, DecodesValidUtf8AndRejectsEveryMalformedForm) {
    const std::string text = "a\u00E9\u20AC\U0001F600";
    const size_t sizes[] = {1, 2, 3, 4};
    const char32_t values[] = {U'a', 0xE9, 0x20AC, 0x1F600};
    size_t offset = 0;
    for (int i = 0; i < 4; ++i) {
        const CodePoint cp = decode_utf8_at(text, offset, "test");
        EXPECT_EQ(cp.value, values[i]);
        EXPECT_EQ(cp.size, sizes[i]);
        offset += cp.size;
    }
    std::string encoded;
    for (char32_t c : values) append_utf8(encoded, c);
    EXPECT_EQ(encoded, text);
    EXPECT_THROW(append_utf8(encoded, 0xD800), Error);
    EXPECT_THROW(append_utf8(encoded, 0x110000), Error);
    const std::string malformed[] = {
        "\x80",             // stray continuation byte
        "\xC0\x80",         // overlong NUL
        "\xE0\x80\xAF",     // overlong '/'
        "\xED\xA0\x80",     // UTF-16 surrogate
        "\xF4\x90\x80\x80", // above U+10FFFF
        "\xE2\x82",         // truncated
        "\xFE",
        "\xFF",
    };
    for (const std::string &bad : malformed) {
        const std::string text_with_bad = "ok " + bad;
        try {
            validate_utf8(text_with_bad, "unit test");
            ADD_FAILURE() << "accepted malformed UTF-8";
        } catch (const Error &error) {
            EXPECT_NE(std::string(error.what()).find("unit test: invalid UTF-8 at byte offset 3"), std::string::npos)
                << error.what();
        }
    }
}

TEST(TextUnicode, ReplaceAllMatchesPythonStrReplace) {
    EXPECT_EQ(replace_all("aaaa", "aa", "b"), "bb");
    EXPECT_EQ(replace_all("a b c", " ", "[SPACE]"), "a[SPACE]b[SPACE]c");
    EXPECT_EQ(replace_all("", "x", "y"), "");
    EXPECT_EQ(replace_all("x", "x", ""), "");
    EXPECT_THROW(replace_all("abc", "", "y"), Error);
}

TEST(TextPuncNorm, MatchesReferenceCases) {
    const auto cases = read_json(test::golden_path("tokenizer_cases.json"))["cases"];
    ASSERT_FALSE(cases.empty());
    for (const auto &c : cases) {
        EXPECT_EQ(punc_norm(c["text"].get<std::string>()), c["punc_norm"].get<std::string>()) << c["text"];
    }
    const auto index = read_json(test::golden_path("index.json"));
    EXPECT_EQ(punc_norm(index["text"].get<std::string>()), index["text_normalized"].get<std::string>());
}

// The variants share the skeleton; their replacement lists and accepted endings differ (the Turbo cases are in
// test_text_gpt2_tokenizer.cpp with its tokenizer).
TEST(TextPuncNorm, VariantsDifferOnlyInTheirRules) {
    const std::string mtl_text = "Bonjour \u00E0 tous! Voici un essai rapide du moteur: les \u00E9l\u00E8ves ont "
                                 "mang\u00E9 42 cr\u00EApes \u00E0 No\u00EBl... \u00C7a va, mon c\u0153ur?";
    EXPECT_EQ(punc_norm(mtl_text, multilingual_punctuation()),
              "Bonjour \u00E0 tous! Voici un essai rapide du moteur, les \u00E9l\u00E8ves ont mang\u00E9 42 "
              "cr\u00EApes \u00E0 No\u00EBl,  \u00C7a va, mon c\u0153ur?"); // golden/mtl index.json
    EXPECT_EQ(punc_norm("\u4F60\u597D\u3002", multilingual_punctuation()), "\u4F60\u597D\u3002");
    EXPECT_EQ(punc_norm("\u4F60\u597D\u3002"), "\u4F60\u597D\u3002.");
    EXPECT_EQ(punc_norm("a; b... c - d", turbo_punctuation()), "A; b... c - d.");
    EXPECT_EQ(punc_norm("a; b... c - d"), "A,  b,  c, d."); // whitespace collapses before the replacements
}

TEST(TextPuncNorm, EmptyAndBlankInput) {
    EXPECT_EQ(punc_norm(""), kEmptyTextFallback);
    EXPECT_EQ(punc_norm("   "), ".");
    EXPECT_EQ(punc_norm("\t\n\u3000"), ".");
}

TEST(TextPuncNorm, CapitalisesOnlyALowercaseFirstCharacter) {
    EXPECT_EQ(punc_norm("hello"), "Hello.");
    EXPECT_EQ(punc_norm("\u00E9t\u00E9"), "\u00C9t\u00E9.");
    EXPECT_EQ(punc_norm("\u00DFtraße"), "SStraße.");
    EXPECT_EQ(punc_norm("\u01C5x"), "\u01C5x.");
    EXPECT_EQ(punc_norm("1st place"), "1st place.");
    // Capitalisation looks at the raw first character, before whitespace is trimmed.
    EXPECT_EQ(punc_norm(" hello"), "hello.");
}

TEST(TextPuncNorm, CollapsesPythonWhitespace) {
    EXPECT_EQ(punc_norm("A\t\n b\u3000c\u00A0d\x1F"
                        "e\r\n"),
              "A b c d e.");
    // U+200B ZERO WIDTH SPACE is not whitespace for Python.
    EXPECT_EQ(punc_norm("A\u200Bb"), "A\u200Bb.");
}

TEST(TextPuncNorm, ReplacementsApplyInOrderAfterWhitespaceCollapse) {
    EXPECT_EQ(punc_norm("a... b"), "A,  b.");
    EXPECT_EQ(punc_norm("wait\u2026"), "Wait,");
    EXPECT_EQ(punc_norm("x: y"), "X, y.");
    EXPECT_EQ(punc_norm("a - b"), "A, b.");
    EXPECT_EQ(punc_norm("a;b"), "A, b.");
    EXPECT_EQ(punc_norm("a ;b"), "A, b."); // ";" -> ", " then " ," -> ","
    EXPECT_EQ(punc_norm("a\u2014b\u2013c"), "A-b-c.");
    EXPECT_EQ(punc_norm("\u201Cq\u201D \u2018s\u2019"), "\"q\" 's'.");
    EXPECT_EQ(punc_norm("a...."), "A, .");
    EXPECT_EQ(punc_norm("a;"), "A,");
    EXPECT_EQ(punc_norm("a -"), "A -");
}

TEST(TextPuncNorm, FullStopOnlyWhenNoSentenceEnder) {
    for (const char *ended : {"Hi!", "Hi?", "Hi,", "Hi-", "Hi."}) EXPECT_EQ(punc_norm(ended), ended);
    EXPECT_EQ(punc_norm("Hi"), "Hi.");
    EXPECT_EQ(punc_norm("Hi\u3002"), "Hi\u3002."); // the English version does not know CJK enders
}

TEST(TextPuncNorm, HandlesNulEmojiCjkAndCombiningMarks) {
    EXPECT_EQ(punc_norm(std::string("a\0b", 3)), std::string("A\0b.", 4));
    EXPECT_EQ(punc_norm("\U0001F600 ok"), "\U0001F600 ok.");
    EXPECT_EQ(punc_norm("\u4F60\u597D"), "\u4F60\u597D.");
    EXPECT_EQ(punc_norm("e\u0301t\u00E9"), "E\u0301t\u00E9.");
}

TEST(TextPuncNorm, LongText) {
    std::string text;
    const int repeats = 700; // ~12 kB
    for (int i = 0; i < repeats; ++i) text += "hello   world... ";
    std::string expected = "Hello world,";
    for (int i = 1; i < repeats; ++i) expected += "  hello world,";
    EXPECT_EQ(punc_norm(text), expected);
}

TEST(TextPuncNorm, EverySingleByte) {
    for (int byte = 0; byte < 256; ++byte) {
        const std::string text(1, static_cast<char>(byte));
        if (byte >= 0x80) {
            EXPECT_THROW(punc_norm(text), Error) << byte;
            continue;
        }
        const std::string out = punc_norm(text);
        const bool space = (byte >= 0x09 && byte <= 0x0D) || (byte >= 0x1C && byte <= 0x20);
        if (space) {
            EXPECT_EQ(out, ".") << byte;
        } else if (byte == ':' || byte == ';') {
            EXPECT_EQ(out, ",") << byte;
        } else if (std::string(".!?-,").find(static_cast<char>(byte)) != std::string::npos) {
            EXPECT_EQ(out, text) << byte;
        } else if (byte >= 'a' && byte <= 'z') {
            EXPECT_EQ(out, std::string(1, static_cast<char>(byte - 32)) + ".") << byte;
        } else {
            EXPECT_EQ(out, text + ".") << byte;
        }
    }
}

TEST(TextPuncNorm, RejectsInvalidUtf8) {
    try {
        punc_norm("caf\xE9 au lait");
        ADD_FAILURE() << "accepted Latin-1 input";
    } catch (const Error &error) {
        EXPECT_NE(std::string(error.what()).find("punc_norm: invalid UTF-8 at byte offset 3 (byte 0xE9)"),
                  std::string::npos)
            << error.what();
    }
    EXPECT_THROW(punc_norm("\xFF"), Error);
}

} // namespace
} // namespace chatterbox::text
