// The mean-flow S3Gen decoder as data (Turbo, Nano): FlowHParams from a checkpoint with and
// without time_embed_mixer, their metadata round trip, the solver's time grids, the trailing
// silence tokens, and the S3Tokenizer's check of the front-end constants Turbo's checkpoint
// stores. The numerics are the golden test's (tests/golden/test_s3gen_meanflow_golden.cpp).

#include "audio/features.h"
#include "core/backend.h"
#include "core/error.h"
#include "core/gguf_file.h"
#include "core/weight_store.h"
#include "models/chatterbox/s3gen/flow.h"
#include "models/chatterbox/s3gen/flow_cfm.h"
#include "models/chatterbox/s3gen/flow_hparams.h"
#include "models/chatterbox/s3tokenizer/s3tokenizer.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

using namespace chatterbox;
using namespace chatterbox::s3gen;

namespace {

bool same_fields(const FlowHParams &a, const FlowHParams &b) {
    for (const HparamField<FlowHParams> &field : FlowHParams::fields())
        if (!std::visit([&](auto member) { return a.*member == b.*member; }, field.member)) return false;
    return true;
}

WeightStore store_with(const std::string &name, const Shape &shape, const std::vector<float> &values) {
    WeightStore store;
    store.add_tensor(HostTensor::from_f32(name, shape, values));
    return store;
}

} // namespace

TEST(MeanFlowHParams, TheMixerTensorSelectsTheMeanFlowDecoder) {
    const FlowHParams turbo = FlowHParams::mean_flow_standard();
    EXPECT_EQ(turbo.mean_flow, 1);
    EXPECT_EQ(turbo.cfm_steps, 2);
    EXPECT_EQ(turbo.cfm_cosine_grid, 0);
    EXPECT_EQ(turbo.cfg_rate, 0.0);
    EXPECT_EQ(turbo.cfg_rows(), 1);
    EXPECT_EQ(turbo.time_points(), 2);
    EXPECT_EQ(turbo.trailing_silence_tokens, 3);
    EXPECT_EQ(turbo.silence_token, 4299);
    const FlowHParams english = FlowHParams::standard();
    EXPECT_EQ(english.cfg_rows(), 2);
    EXPECT_EQ(english.time_points(), 1);
    EXPECT_EQ(english.trailing_silence_tokens, 0);

    // Only the mixer present: the other sizes keep their defaults (binding would report the rest missing).
    const int64_t temb = english.time_embed_dim();
    const WeightStore with_mixer = store_with("s3gen.flow.decoder.estimator.time_embed_mixer.weight", {temb, 2 * temb},
                                              std::vector<float>(size_t(2 * temb * temb), 0.0f));
    EXPECT_TRUE(same_fields(FlowHParams::from_checkpoint(with_mixer, "s3gen.flow."), turbo));
    const WeightStore without = store_with("s3gen.flow.encoder_proj.bias", {80}, std::vector<float>(80, 0.0f));
    EXPECT_TRUE(same_fields(FlowHParams::from_checkpoint(without, "s3gen.flow."), english));
}

TEST(MeanFlowHParams, MetadataRoundTripAndRules) {
    const std::string path = test::temp_dir("mean-flow") + "/flow.gguf";
    GgufWriter writer;
    write_fields(FlowHParams::fields(), FlowHParams::mean_flow_standard(), writer);
    writer.write(path);
    const FlowHParams read = read_fields(FlowHParams::fields(), GgufFile(path));
    EXPECT_TRUE(same_fields(read, FlowHParams::mean_flow_standard()));
    EXPECT_NO_THROW(read.validate());

    FlowHParams bad = FlowHParams::mean_flow_standard();
    bad.mean_flow = 2;
    test::expect_error([&] { bad.validate(); }, "chatterbox.s3gen.mean_flow is 2");
    bad = FlowHParams::mean_flow_standard();
    bad.cfm_cosine_grid = 3;
    test::expect_error([&] { bad.validate(); }, "chatterbox.s3gen.cfm_cosine_grid is 3");
    bad = FlowHParams::mean_flow_standard();
    bad.silence_token = bad.vocab;
    test::expect_error([&] { bad.validate(); }, "chatterbox.s3gen.silence_token 6561");
    bad = FlowHParams::mean_flow_standard();
    bad.trailing_silence_tokens = -1;
    test::expect_error([&] { bad.validate(); }, "chatterbox.s3gen.trailing_silence_tokens");
}

TEST(MeanFlowSolver, TimeGrids) {
    EXPECT_EQ(linear_time_grid(2), (std::vector<float>{0.0f, 0.5f, 1.0f}));
    EXPECT_EQ(cfm_time_grid(FlowHParams::mean_flow_standard()), (std::vector<float>{0.0f, 0.5f, 1.0f}));
    const std::vector<float> ten = linear_time_grid(10);
    for (int k = 0; k <= 10; ++k) EXPECT_NEAR(ten[size_t(k)], k / 10.0, 1e-7) << k;
    EXPECT_EQ(ten.front(), 0.0f);
    EXPECT_EQ(ten.back(), 1.0f);
    EXPECT_EQ(cfm_time_grid(FlowHParams::standard()), cosine_time_grid(10));
    EXPECT_THROW(linear_time_grid(0), Error);
}

TEST(MeanFlowTokens, TurboAppendsThreeSilenceTokens) {
    const std::vector<int32_t> spoken = {12, 4061, 6560};
    EXPECT_EQ(flow_input_tokens(spoken, FlowHParams::standard()), spoken);
    EXPECT_EQ(flow_input_tokens(spoken, FlowHParams::mean_flow_standard()),
              (std::vector<int32_t>{12, 4061, 6560, 4299, 4299, 4299}));
    EXPECT_EQ(flow_input_tokens({}, FlowHParams::mean_flow_standard()), (std::vector<int32_t>{4299, 4299, 4299}));
}

// Turbo's checkpoint stores tokenizer._mel_filters and tokenizer.window: the official values bind,
// others are refused by name before anything else is bound.
TEST(S3TokenizerConstants, StoredFrontEndConstantsAreChecked) {
    Backend backend(BackendOptions{"cpu", 1});
    const s3tokenizer::S3TokenizerHParams hp;
    const audio::Matrix filters = audio::s3tokenizer_mel_filters();
    ASSERT_EQ(filters.rows, 128);
    ASSERT_EQ(filters.cols, 201);
    const std::string mel_name = "s3gen.tokenizer._mel_filters", window_name = "s3gen.tokenizer.window";
    auto bind = [&](const WeightStore &store) { s3tokenizer::S3Tokenizer tokenizer(store, backend, hp); };

    // The official constants pass the check; binding then fails only on the missing weights.
    WeightStore official = store_with(mel_name, {128, 201}, filters.values);
    official.add_tensor(HostTensor::from_f32(window_name, {400}, audio::s3tokenizer_window()));
    try {
        bind(official);
        ADD_FAILURE() << "a store without the tokenizer weights bound";
    } catch (const Error &e) {
        EXPECT_TRUE(test::contains(e.what(), "encoder.conv1"));
        EXPECT_FALSE(test::contains(e.what(), "_mel_filters"));
        EXPECT_FALSE(test::contains(e.what(), "window"));
    }

    std::vector<float> other = filters.values;
    other[5 * 201 + 7] += 1e-3f;
    test::expect_error([&] { bind(store_with(mel_name, {128, 201}, other)); }, {mel_name, "differs"});
    test::expect_error(
        [&] {
            bind(store_with(mel_name, {128, 200}, std::vector<float>(128 * 200)));
        },
        {mel_name, "[128, 200]"});
    std::vector<float> window = audio::s3tokenizer_window();
    window[0] = 0.5f;
    test::expect_error([&] { bind(store_with(window_name, {400}, window)); }, {window_name, "differs"});
}
