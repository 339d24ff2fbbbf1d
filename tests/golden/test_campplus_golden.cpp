// needs: synthetic-weights
// CAMPPlus from the golden mean-subtracted fbank (campplus_fbank), full-size synthetic weights:
// the x-vector against the official implementation; segment pooling tables; input validation.

#include "core/backend.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/weight_store.h"
#include "models/chatterbox/campplus/campplus.h"
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

class CampPlusGolden : public test::GoldenComponent<campplus::CampPlus> {
  protected:
    static void SetUpTestSuite() {
        load("s3gen.safetensors", "s3gen.", [](const WeightStore &s, Backend &b) {
            return std::make_unique<campplus::CampPlus>(s, b, campplus::CampPlusHParams{});
        });
        const NpyArray fbank = read_npy(golden_path("campplus_fbank.npy"));
        frames_ = fbank.shape.at(0);
        fbank_ = fbank.f32();
    }
    static std::vector<float> fbank_;
    static int64_t frames_;
};

std::vector<float> CampPlusGolden::fbank_;
int64_t CampPlusGolden::frames_ = 0;

TEST_F(CampPlusGolden, XVector) {
    expect_matches_golden(model_->embed(*backend_, fbank_, frames_), "campplus_xvector");
}

TEST_F(CampPlusGolden, ShortestInputRuns) {
    const std::vector<float> head(fbank_.begin(), fbank_.begin() + campplus::kMinFrames * campplus::kFbankBins);
    const std::vector<float> x = model_->embed(*backend_, head, campplus::kMinFrames);
    ASSERT_EQ(x.size(), size_t(campplus::kEmbeddingSize));
    for (float v : x) ASSERT_TRUE(std::isfinite(v));
}

TEST_F(CampPlusGolden, RejectsBadInput) {
    EXPECT_THROW(model_->embed(*backend_, {}, 0), Error);
    EXPECT_THROW(model_->embed(*backend_, std::vector<float>(2 * 80, 0.0f), 2), Error); // std over one frame
    EXPECT_THROW(model_->embed(*backend_, fbank_, frames_ + 1), Error);
    std::vector<float> bad = fbank_;
    bad[999] = std::numeric_limits<float>::infinity();
    EXPECT_THROW(model_->embed(*backend_, bad, frames_), Error);
}

TEST(CampPlusSegmentPooling, MeanPlusSegmentAverage) {
    using campplus::SegmentPooling;
    const int64_t frames = 250; // segments of 100, 100, 50
    ASSERT_EQ(SegmentPooling::segments(frames), 3);
    const std::vector<float> pool = SegmentPooling::pool_values(frames);
    const std::vector<float> expand = SegmentPooling::expand_values(frames);
    // pool (S, T): row s averages its segment and adds the clip mean.
    EXPECT_FLOAT_EQ(pool[0 * frames + 0], 1.0f / 250 + 1.0f / 100);
    EXPECT_FLOAT_EQ(pool[0 * frames + 100], 1.0f / 250);
    EXPECT_FLOAT_EQ(pool[2 * frames + 249], 1.0f / 250 + 1.0f / 50);
    // expand (T, S): one-hot segment of each frame.
    EXPECT_EQ(expand[199 * 3 + 1], 1.0f);
    EXPECT_EQ(expand[200 * 3 + 2], 1.0f);
    EXPECT_EQ(std::count(expand.begin(), expand.end(), 1.0f), frames);
}

} // namespace
