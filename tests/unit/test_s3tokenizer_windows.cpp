// S3Tokenizer long-input handling: the reference's sliding windows (3000 frames every 2600) and
// merge_tokenized_segments (drop 50 tokens at each inner window edge, Python slice semantics).

#include "models/chatterbox/s3tokenizer/s3tokenizer.h"

#include <gtest/gtest.h>

using namespace chatterbox::s3tokenizer;

TEST(S3TokenizerWindows, TokenCountRoundsUpTwice) {
    EXPECT_EQ(token_count(1), 1);
    EXPECT_EQ(token_count(4), 1);
    EXPECT_EQ(token_count(5), 2);
    EXPECT_EQ(token_count(7), 2);
    EXPECT_EQ(token_count(600), 150);
    EXPECT_EQ(token_count(3000), 750);
}

TEST(S3TokenizerWindows, OneWindowUpTo30Seconds) {
    const std::vector<Window> w = sliding_windows(3000);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].start, 0);
    EXPECT_EQ(w[0].frames, 3000);
    const auto ranges = merged_ranges({750});
    ASSERT_EQ(ranges.size(), 1u);
    EXPECT_EQ(ranges[0], std::make_pair(int64_t(0), int64_t(750)));
}

TEST(S3TokenizerWindows, LongInputWindowsAndMerge) {
    // 5300 frames: [0, 3000), [2600, 5300), [5200, 5300).
    const std::vector<Window> w = sliding_windows(5300);
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(w[1].start, 2600);
    EXPECT_EQ(w[1].frames, 2700);
    EXPECT_EQ(w[2].start, 5200);
    EXPECT_EQ(w[2].frames, 100);
    std::vector<int64_t> counts;
    for (const Window &x : w) counts.push_back(token_count(x.frames)); // 750, 675, 25
    const auto ranges = merged_ranges(counts);
    EXPECT_EQ(ranges[0], std::make_pair(int64_t(0), int64_t(700)));
    EXPECT_EQ(ranges[1], std::make_pair(int64_t(50), int64_t(625)));
    EXPECT_EQ(ranges[2], std::make_pair(int64_t(25), int64_t(25))); // tokens[50:] of 25 tokens: empty
    // 3001 frames: [0, 3000) and [2600, 3001): 700 + (101 - 50) tokens.
    const std::vector<Window> two = sliding_windows(3001);
    ASSERT_EQ(two.size(), 2u);
    const auto r2 = merged_ranges({token_count(two[0].frames), token_count(two[1].frames)});
    EXPECT_EQ(r2[0].second - r2[0].first + r2[1].second - r2[1].first, 700 + 51);
}
