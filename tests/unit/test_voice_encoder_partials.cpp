// VoiceEncoder partial windows (get_frame_step + get_num_wins of the official code) and the
// host LSTM against a naive double-precision reference.

#include "core/error.h"
#include "models/chatterbox/voice_encoder/voice_encoder.h"
#include "modules/lstm.h"
#include "nn_harness.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace chatterbox;
using namespace chatterbox::test;
using voice_encoder::partial_layout;
using voice_encoder::PartialOptions;

TEST(VoiceEncoderPartials, RateGivesStep77) {
    const auto layout = partial_layout(1001);
    EXPECT_EQ(layout.step, 77);
    EXPECT_EQ(layout.count, 12);
    EXPECT_EQ(layout.target_frames, 1007);
    const auto golden = partial_layout(697);
    EXPECT_EQ(golden.count, 8);
    EXPECT_EQ(golden.target_frames, 699);
}

TEST(VoiceEncoderPartials, ShortAndCoverageEdges) {
    EXPECT_EQ(partial_layout(1).count, 1);
    EXPECT_EQ(partial_layout(1).target_frames, 160);
    EXPECT_EQ(partial_layout(160).count, 1);
    // 160 + 77 + r frames: a second window when (r + 83) / 160 >= 0.8, i.e. r >= 45.
    EXPECT_EQ(partial_layout(160 + 44).count, 1);
    EXPECT_EQ(partial_layout(160 + 45).count, 2);
    EXPECT_EQ(partial_layout(160 + 45).target_frames, 237); // truncated to whole windows
}

TEST(VoiceEncoderPartials, OverlapWhenNoRate) {
    PartialOptions options;
    options.rate = 0.0;
    options.overlap = 0.5;
    EXPECT_EQ(partial_layout(400, options).step, 80);
    options.overlap = 1.0;
    EXPECT_THROW(partial_layout(400, options), Error);
    options.rate = 10.0; // step 10, fine
    options.overlap = 0.5;
    EXPECT_EQ(partial_layout(400, options).step, 10);
    options.rate = 1.0; // step 100
    EXPECT_EQ(partial_layout(400, options).step, 100);
    options.rate = 0.5; // step 200 > 160
    EXPECT_THROW(partial_layout(400, options), Error);
    EXPECT_THROW(partial_layout(0), Error);
}

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

} // namespace

TEST(NnLstm, MatchesNaiveReference) {
    NnHarness h;
    const int64_t in = 5, hidden = 7, layers = 2, batch = 3, steps = 6;
    std::vector<std::vector<float>> wih, whh, bih, bhh;
    for (int k = 0; k < layers; ++k) {
        const std::string s = std::to_string(k);
        wih.push_back(h.add("m.lstm.weight_ih_l" + s, {4 * hidden, k == 0 ? in : hidden}));
        whh.push_back(h.add("m.lstm.weight_hh_l" + s, {4 * hidden, hidden}));
        bih.push_back(h.add("m.lstm.bias_ih_l" + s, {4 * hidden}));
        bhh.push_back(h.add("m.lstm.bias_hh_l" + s, {4 * hidden}));
    }
    ModuleWeights w(h.store(), "m.", h.backend());
    nn::Lstm lstm(w, "lstm", in, hidden, layers);
    w.load();
    const std::vector<float> x = h.input(size_t(batch * steps * in), -2.0f, 2.0f);
    const std::vector<float> actual = lstm.final_hidden(x, batch, steps);

    std::vector<double> seq(x.begin(), x.end());
    int64_t width = in;
    for (int k = 0; k < layers; ++k) {
        std::vector<double> out(size_t(batch * steps * hidden));
        for (int64_t b = 0; b < batch; ++b) {
            std::vector<double> hs(size_t(hidden), 0.0), cs(size_t(hidden), 0.0);
            for (int64_t t = 0; t < steps; ++t) {
                std::vector<double> gate(size_t(4 * hidden));
                for (int64_t r = 0; r < 4 * hidden; ++r) {
                    double acc = double(bih[k][size_t(r)]) + bhh[k][size_t(r)];
                    for (int64_t c = 0; c < width; ++c)
                        acc += wih[k][size_t(r * width + c)] * seq[size_t((b * steps + t) * width + c)];
                    for (int64_t c = 0; c < hidden; ++c) acc += whh[k][size_t(r * hidden + c)] * hs[size_t(c)];
                    gate[size_t(r)] = acc;
                }
                for (int64_t u = 0; u < hidden; ++u) {
                    cs[size_t(u)] = sigmoid(gate[size_t(hidden + u)]) * cs[size_t(u)] +
                                    sigmoid(gate[size_t(u)]) * std::tanh(gate[size_t(2 * hidden + u)]);
                    hs[size_t(u)] = sigmoid(gate[size_t(3 * hidden + u)]) * std::tanh(cs[size_t(u)]);
                    out[size_t((b * steps + t) * hidden + u)] = hs[size_t(u)];
                }
            }
        }
        seq = out;
        width = hidden;
    }
    ASSERT_EQ(actual.size(), size_t(batch * hidden));
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t u = 0; u < hidden; ++u)
            EXPECT_NEAR(actual[size_t(b * hidden + u)], seq[size_t((b * steps + steps - 1) * hidden + u)], 1e-5);
    EXPECT_THROW(lstm.final_hidden(x, batch, steps + 1), Error);
    EXPECT_THROW(lstm.final_hidden({}, 0, steps), Error);
}
