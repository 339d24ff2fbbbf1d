#include "core/error.h"
#include "text/sentence_splitter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

using chatterbox::text::Boundary;
using chatterbox::text::split_sentences;
using chatterbox::text::split_text;
using chatterbox::text::SplitOptions;
using chatterbox::text::TextPiece;

namespace {

std::vector<std::string> texts(const std::vector<TextPiece> &pieces) {
    std::vector<std::string> out;
    for (const TextPiece &p : pieces) out.push_back(p.text);
    return out;
}

SplitOptions budget(size_t max_length) {
    SplitOptions options;
    options.max_length = max_length;
    return options;
}

using Strings = std::vector<std::string>;

} // namespace

TEST(SentenceSplitter, SplitsPlainSentences) {
    EXPECT_EQ(split_sentences("Hello there. How are you? I am fine!"),
              (Strings{"Hello there.", "How are you?", "I am fine!"}));
}

TEST(SentenceSplitter, EmptyAndWhitespaceOnlyGiveNothing) {
    EXPECT_TRUE(split_text("").empty());
    EXPECT_TRUE(split_text(" \t\n \u00a0 ").empty());
    EXPECT_TRUE(split_sentences("\n\n").empty());
}

TEST(SentenceSplitter, NoPunctuationIsOneSentence) {
    EXPECT_EQ(split_sentences("  just some words   without an end  "), (Strings{"just some words without an end"}));
}

TEST(SentenceSplitter, KeepsAbbreviationsAndInitialsInTheSentence) {
    EXPECT_EQ(split_sentences("Dr. Smith met Mr. Jones at St. Mary's. They talked."),
              (Strings{"Dr. Smith met Mr. Jones at St. Mary's.", "They talked."}));
    EXPECT_EQ(split_sentences("J. R. R. Tolkien wrote it. Read it."),
              (Strings{"J. R. R. Tolkien wrote it.", "Read it."}));
    EXPECT_EQ(split_sentences("Fruit, e.g. apples, is good. Yes."), (Strings{"Fruit, e.g. apples, is good.", "Yes."}));
}

TEST(SentenceSplitter, NumbersAreNotSentenceEnds) {
    EXPECT_EQ(split_sentences("Pi is 3.14 roughly. It costs $1,000.50 today."),
              (Strings{"Pi is 3.14 roughly.", "It costs $1,000.50 today."}));
    EXPECT_EQ(split_sentences("Version 2.0.1 is out. Get it."), (Strings{"Version 2.0.1 is out.", "Get it."}));
}

TEST(SentenceSplitter, EllipsesEndASentenceOnlyBeforeACapital) {
    EXPECT_EQ(split_sentences("Wait... what was that? Nothing... Go on."),
              (Strings{"Wait... what was that?", "Nothing...", "Go on."}));
    EXPECT_EQ(split_sentences("So\u2026 Fine."), (Strings{"So\u2026", "Fine."}));
}

TEST(SentenceSplitter, ClosingQuotesStayWithTheirSentence) {
    EXPECT_EQ(split_sentences("He said \"Stop.\" Then he left. (It was late.) The end"),
              (Strings{"He said \"Stop.\"", "Then he left.", "(It was late.)", "The end"}));
    EXPECT_EQ(split_sentences("\u201cReally?!\u201d she asked. Yes."),
              (Strings{"\u201cReally?!\u201d she asked.", "Yes."}));
}

TEST(SentenceSplitter, RunsOfPunctuationAndCjkEnders) {
    EXPECT_EQ(split_sentences("What?! No!!! OK."), (Strings{"What?!", "No!!!", "OK."}));
    EXPECT_EQ(split_sentences("\u4f60\u597d\u3002 \u518d\u89c1\u3002"),
              (Strings{"\u4f60\u597d\u3002", "\u518d\u89c1\u3002"}));
}

TEST(SentenceSplitter, FullStopsOfEveryScript) {
    // Chinese and Japanese: no space after the full stop; CJK quotes stay with their sentence.
    EXPECT_EQ(split_sentences("你好。我是中文！真的？"), (Strings{"你好。", "我是中文！", "真的？"}));
    EXPECT_EQ(split_sentences("「東京です。」と言った。はい。"), (Strings{"「東京です。」", "と言った。", "はい。"}));
    EXPECT_EQ(split_sentences("半角｡全角．"), (Strings{"半角｡", "全角．"}));
    // Hindi: danda and double danda.
    EXPECT_EQ(split_sentences("नमस्ते दुनिया। आप कैसे हैं॥ ठीक"), (Strings{"नमस्ते दुनिया।", "आप कैसे हैं॥", "ठीक"}));
    // Arabic question mark and full stop (Urdu style).
    EXPECT_EQ(split_sentences("كيف حالك؟ أنا بخير۔ شكرا"), (Strings{"كيف حالك؟", "أنا بخير۔", "شكرا"}));
    // Greek question mark (U+037E); the ASCII ';' is a clause mark.
    EXPECT_EQ(split_sentences("Τι κάνεις\u037E Καλά."), (Strings{"Τι κάνεις\u037E", "Καλά."}));
    EXPECT_EQ(split_sentences("Τι κάνεις; Καλά."), (Strings{"Τι κάνεις; Καλά."}));
    // Korean and the Latin and Cyrillic scripts end sentences as English does.
    EXPECT_EQ(split_sentences("안녕하세요. 반갑습니다!"), (Strings{"안녕하세요.", "반갑습니다!"}));
    EXPECT_EQ(split_sentences("Привет. Как дела?"), (Strings{"Привет.", "Как дела?"}));
    EXPECT_EQ(split_sentences("¿Dónde está? ¡Aquí!"), (Strings{"¿Dónde está?", "¡Aquí!"}));
}

TEST(SentenceSplitter, CollapsesWhitespaceInsidePieces) {
    const auto pieces = split_text("One\n\ntwo   three.\tFour.");
    EXPECT_EQ(texts(pieces), (Strings{"One two three.", "Four."}));
    EXPECT_EQ(pieces[0].after, Boundary::sentence);
    EXPECT_EQ(pieces[1].after, Boundary::end);
}

TEST(SentenceSplitter, LongSentenceIsCutAtClausesFirst) {
    const auto pieces = split_text("First part here, second part here; third part here. Next.", budget(20));
    EXPECT_EQ(texts(pieces), (Strings{"First part here,", "second part here;", "third part here.", "Next."}));
    EXPECT_EQ(pieces[0].after, Boundary::clause);
    EXPECT_EQ(pieces[2].after, Boundary::sentence);
}

TEST(SentenceSplitter, ClausesArePackedUpToTheBudget) {
    const auto pieces = split_text("a, b, c, d, e, f.", budget(8));
    EXPECT_EQ(texts(pieces), (Strings{"a, b, c,", "d, e, f."}));
}

TEST(SentenceSplitter, ClauseWithoutPunctuationIsCutBetweenWords) {
    const auto pieces = split_text("one two three four five six seven", budget(10));
    EXPECT_EQ(texts(pieces), (Strings{"one two", "three four", "five six", "seven"}));
    EXPECT_EQ(pieces[0].after, Boundary::word);
}

TEST(SentenceSplitter, VeryLongWordIsCutBetweenCharacters) {
    const std::string word(25, 'x');
    const auto pieces = split_text("go " + word + " now", budget(10));
    EXPECT_EQ(texts(pieces), (Strings{"go", std::string(10, 'x'), std::string(10, 'x'), "xxxxx", "now"}));
}

TEST(SentenceSplitter, MultiByteCharactersAreNeverCut) {
    const std::string word = "\u00e9\u00e9\u00e9\u00e9\u00e9"; // 5 code points, 10 bytes
    const auto pieces = split_text(word, budget(2));
    EXPECT_EQ(texts(pieces), (Strings{"\u00e9\u00e9", "\u00e9\u00e9", "\u00e9"}));
}

TEST(SentenceSplitter, EveryPieceFitsAndNothingIsLost) {
    std::string text;
    for (int i = 0; i < 200; ++i) text += "Sentence number " + std::to_string(i) + (i % 7 ? ", with a clause. " : " ");
    text += std::string(700, 'z');
    SplitOptions options = budget(40);
    const auto pieces = split_text(text, options);
    auto without_spaces = [](std::string s) {
        s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
        return s;
    };
    std::string joined;
    for (const TextPiece &p : pieces) {
        EXPECT_LE(p.text.size(), 40u) << p.text;
        EXPECT_FALSE(p.text.empty());
        EXPECT_EQ(p.text.find("  "), std::string::npos) << p.text;
        joined += p.text;
    }
    EXPECT_EQ(without_spaces(joined), without_spaces(text));
}

TEST(SentenceSplitter, UsesTheGivenMeasure) {
    SplitOptions options = budget(2);
    options.measure = [](std::string_view s) { // counts words
        size_t words = 1;
        for (char c : s) words += c == ' ';
        return words;
    };
    EXPECT_EQ(texts(split_text("a b c d e", options)), (Strings{"a b", "c d", "e"}));
}

TEST(SentenceSplitter, RejectsInvalidUtf8AndZeroBudget) {
    EXPECT_THROW(split_text("bad \xff byte"), chatterbox::Error);
    EXPECT_THROW(split_text("text", budget(0)), chatterbox::Error);
}
