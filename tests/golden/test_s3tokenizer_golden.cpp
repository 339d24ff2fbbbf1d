// needs: synthetic-weights
// S3TokenizerV2 from the golden log-mels (s3tok_logmel_*), full-size synthetic weights: the FSQ
// projection and the speech tokens of both reference calls (T3 prompt with max_len 150, S3Gen prompt)
// against the official implementation; FSQ digits; input validation.

#include "core/backend.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/weight_store.h"
#include "models/chatterbox/s3tokenizer/s3tokenizer.h"
#include "support/golden_component.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

using namespace chatterbox;
using namespace chatterbox::test;

namespace {

class S3TokenizerGolden : public test::GoldenComponent<s3tokenizer::S3Tokenizer> {
  protected:
    static void SetUpTestSuite() {
        load("s3gen.safetensors", "s3gen.", [](const WeightStore &s, Backend &b) {
            return std::make_unique<s3tokenizer::S3Tokenizer>(s, b, s3tokenizer::S3TokenizerHParams{});
        });
    }

    // Runs one golden call and checks projection and tokens; a token may differ only where the
    // reference's |tanh(h) * 0.999| lies within 1e-3 of the 0.5 rounding threshold (each printed).
    static void check_call(const std::string &call, int64_t max_len) {
        const NpyArray mel = read_npy(golden_path("s3tok_logmel_" + call + ".npy"));
        const s3tokenizer::Tokens t = model_->tokenize(*backend_, mel.f32(), mel.shape.at(1), max_len);

        const std::string projection_name = "s3tok_fsq_projection_" + call;
        const std::vector<float> expected = read_npy(golden_path(projection_name + ".npy")).f32();
        expect_matches_golden(t.projection, expected, projection_name);

        const std::vector<int64_t> tokens = read_npy(golden_path("s3tok_tokens_" + call + ".npy")).i64();
        ASSERT_EQ(t.tokens.size(), tokens.size());
        int flips = 0;
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (t.tokens[i] == tokens[i]) continue;
            ++flips;
            double margin = 1.0;
            for (int64_t d = 0; d < s3tokenizer::kFsqDims; ++d)
                margin = std::min(margin, std::fabs(std::fabs(std::tanh(double(expected[i * 8 + d])) * 0.999) - 0.5));
            std::printf("[s3tokenizer] %s token %zu: %d vs reference %lld, FSQ margin %.2e\n", call.c_str(), i,
                        t.tokens[i], (long long)tokens[i], margin);
            EXPECT_LT(margin, 1e-3) << call << " token " << i << " differs far from a rounding threshold";
        }
        std::printf("[s3tokenizer] %s: %zu tokens, %d flips\n", call.c_str(), tokens.size(), flips);
    }
};

TEST_F(S3TokenizerGolden, T3PromptWithMaxLen) { check_call("t3prompt", 150); }

TEST_F(S3TokenizerGolden, S3GenPrompt) { check_call("s3genprompt", 0); }

TEST_F(S3TokenizerGolden, MaxLenTruncatesFrames) {
    const NpyArray mel = read_npy(golden_path("s3tok_logmel_s3genprompt.npy"));
    const s3tokenizer::Tokens full = model_->tokenize(*backend_, mel.f32(), mel.shape.at(1));
    const s3tokenizer::Tokens cut = model_->tokenize(*backend_, mel.f32(), mel.shape.at(1), 20); // first 80 frames
    ASSERT_EQ(full.tokens.size(), size_t(175));
    ASSERT_EQ(cut.tokens.size(), size_t(20));
    // Odd frame counts round up: ceil(ceil(7 / 2) / 2) = 2.
    std::vector<float> seven(size_t(128 * 7));
    for (int64_t m = 0; m < 128; ++m) std::copy_n(mel.f32().begin() + m * mel.shape.at(1), 7, seven.begin() + m * 7);
    EXPECT_EQ(model_->tokenize(*backend_, seven, 7).tokens.size(), size_t(2));
}

TEST_F(S3TokenizerGolden, RejectsBadInput) {
    EXPECT_THROW(model_->tokenize(*backend_, {}, 0), Error);
    EXPECT_THROW(model_->tokenize(*backend_, std::vector<float>(128 * 10, 0.0f), 11), Error);
    EXPECT_THROW(model_->tokenize(*backend_, std::vector<float>(128 * 10, 0.0f), 10, -1), Error);
    std::vector<float> bad(128 * 10, 0.0f);
    bad[77] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_THROW(model_->tokenize(*backend_, bad, 10), Error);
    const int64_t too_long = s3tokenizer::kMaxFrames + 1;
    const std::vector<float> hour(size_t(128 * too_long), 0.0f);
    EXPECT_THROW(model_->tokenize(*backend_, hour, too_long), Error);
    // ... unless max_len keeps it within the limit.
    EXPECT_EQ(model_->tokenize(*backend_, hour, too_long, 10).tokens.size(), size_t(10));
}

TEST(S3TokenizerFsq, DigitsAreBase3) {
    // tanh(-5) * 0.999 -> -1 (digit 0); 0 -> digit 1; tanh(5) * 0.999 -> 1 (digit 2).
    const float low[8] = {-5, -5, -5, -5, -5, -5, -5, -5};
    const float mid[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const float high[8] = {5, 5, 5, 5, 5, 5, 5, 5};
    const float mixed[8] = {5, 0, -5, 0, 0, 0, 0, 5};
    EXPECT_EQ(s3tokenizer::fsq_token(low), 0);
    EXPECT_EQ(s3tokenizer::fsq_token(mid), 3280);
    EXPECT_EQ(s3tokenizer::fsq_token(high), s3tokenizer::kVocabSize - 1);
    EXPECT_EQ(s3tokenizer::fsq_token(mixed), 2 + 1 * 3 + 0 * 9 + 1 * 27 + 1 * 81 + 1 * 243 + 1 * 729 + 2 * 2187);
}

} // namespace
