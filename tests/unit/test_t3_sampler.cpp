// T3 sampling stages against naive references on hand-made logits, seeded determinism, parameter
// validation, token filtering and the host-side helpers that need no weights.

#include "core/error.h"
#include "models/chatterbox/t3/backbone.h"
#include "models/chatterbox/t3/embeddings.h"
#include "models/chatterbox/t3/generate.h"
#include "models/chatterbox/t3/sampler.h"
#include "models/chatterbox/variant_spec.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

using namespace chatterbox;
using namespace chatterbox::t3;

using test::expect_error;

namespace {

const float kInf = INFINITY;

std::vector<double> naive_softmax(const std::vector<float> &l) {
    double max = -INFINITY;
    for (float v : l) max = std::max(max, double(v));
    std::vector<double> p(l.size());
    double sum = 0;
    for (size_t i = 0; i < l.size(); ++i) sum += p[i] = std::exp(double(l[i]) - max);
    for (double &v : p) v /= sum;
    return p;
}

std::vector<bool> removed(const std::vector<float> &l) {
    std::vector<bool> r;
    for (float v : l) r.push_back(v == -kInf);
    return r;
}

} // namespace

TEST(T3Sampler, CfgCombine) {
    const std::vector<float> cond{1.0f, -2.0f, 0.5f}, uncond{0.0f, 1.0f, 0.5f};
    const std::vector<float> got = cfg_combine(cond.data(), uncond.data(), 3, 0.5f);
    for (size_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(got[i], cond[i] + 0.5f * (cond[i] - uncond[i]));
}

TEST(T3Sampler, RepetitionPenaltyOncePerDistinctId) {
    std::vector<float> l{2.0f, -2.0f, 0.0f, 3.0f, -1.0f};
    apply_repetition_penalty(l, {0, 1, 1, 1, 2, 0}, 2.0f);
    EXPECT_EQ(l, (std::vector<float>{1.0f, -4.0f, 0.0f, 3.0f, -1.0f})); // 0 is not < 0: divided, stays 0
    expect_error([&] { apply_repetition_penalty(l, {5}, 1.2f); }, "token 5");
    expect_error([&] { apply_repetition_penalty(l, {-1}, 1.2f); }, "token -1");
}

TEST(T3Sampler, Temperature) {
    std::vector<float> l{1.0f, -3.0f};
    apply_temperature(l, 0.5f);
    EXPECT_EQ(l, (std::vector<float>{2.0f, -6.0f}));
    apply_temperature(l, 1.0f);
    EXPECT_EQ(l, (std::vector<float>{2.0f, -6.0f}));
}

TEST(T3Sampler, MinPMatchesNaiveThreshold) {
    const std::vector<float> base{2.0f, 1.0f, 0.0f, -1.0f, -3.0f, 1.9f, -kInf};
    for (float min_p : {0.0f, 0.05f, 0.2f, 0.5f, 0.95f, 1.0f}) {
        std::vector<float> l = base;
        apply_min_p(l, min_p);
        const std::vector<double> p = naive_softmax(base);
        const double top = *std::max_element(p.begin(), p.end());
        for (size_t i = 0; i < base.size(); ++i) {
            const bool expect_removed = base[i] == -kInf || (i != 0 && p[i] < min_p * top);
            EXPECT_EQ(l[i] == -kInf, expect_removed) << "min_p " << min_p << " token " << i;
            if (!expect_removed) {
                EXPECT_EQ(l[i], base[i]);
            }
        }
    }
}

TEST(T3Sampler, TopPMatchesNaiveNucleus) {
    // A token stays when the probability of the tokens strictly more likely than it is < top_p.
    const std::vector<float> base{0.3f, 2.0f, -1.0f, 1.2f, 0.9f, -2.5f, -kInf};
    for (float top_p : {0.05f, 0.3f, 0.6f, 0.8f, 0.95f, 1.0f}) {
        std::vector<float> l = base;
        apply_top_p(l, top_p);
        const std::vector<double> p = naive_softmax(base);
        for (size_t i = 0; i < base.size(); ++i) {
            double above = 0;
            for (size_t j = 0; j < base.size(); ++j)
                if (base[j] > base[i]) above += p[j];
            const bool expect_removed = base[i] == -kInf || above >= top_p;
            EXPECT_EQ(l[i] == -kInf, expect_removed) << "top_p " << top_p << " token " << i;
        }
    }
    std::vector<float> all = base;
    apply_top_p(all, 1.0f);
    EXPECT_EQ(removed(all), removed(base)); // 1.0 removes nothing new
}

TEST(T3Sampler, SoftmaxAndArgmax) {
    const std::vector<float> l{1.0f, 3.0f, 3.0f, -kInf};
    const std::vector<float> p = softmax(l);
    const std::vector<double> ref = naive_softmax(l);
    double sum = 0;
    for (size_t i = 0; i < l.size(); ++i) {
        EXPECT_NEAR(p[i], ref[i], 1e-7);
        sum += p[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
    EXPECT_EQ(p[3], 0.0f);
    EXPECT_EQ(argmax(l), 1); // first of the tied maxima, like torch.argmax
}

TEST(T3Sampler, MultinomialFrequencies) {
    const std::vector<float> probs{0.1f, 0.0f, 0.2f, 0.7f};
    Rng rng(7);
    std::map<int, int> counts;
    const int n = 40000;
    for (int i = 0; i < n; ++i) ++counts[sample_multinomial(probs, rng)];
    EXPECT_EQ(counts[1], 0);
    EXPECT_NEAR(counts[0] / double(n), 0.1, 0.01);
    EXPECT_NEAR(counts[2] / double(n), 0.2, 0.01);
    EXPECT_NEAR(counts[3] / double(n), 0.7, 0.01);
    expect_error([&] { sample_multinomial({0.0f, 0.0f}, rng); }, "zero");
    expect_error([&] { sample_multinomial({0.5f, -0.1f}, rng); }, "invalid");
}

TEST(T3Sampler, ChooseTokenEqualsNaivePipeline) {
    // temperature -> min-p -> top-p -> softmax -> torch.multinomial, written out by hand.
    const std::vector<float> base{1.5f, 0.2f, -0.7f, 1.1f, 2.3f, -4.0f, 0.9f, 1.8f};
    SamplingParams params;
    params.temperature = 0.7f;
    params.min_p = 0.1f;
    params.top_p = 0.8f;
    for (uint64_t seed = 0; seed < 50; ++seed) {
        std::vector<float> l = base;
        Rng rng(seed), reference_rng(seed);
        const int got = choose_token(l, variant_spec(Variant::english).t3.sampler, {}, params, rng);

        std::vector<float> t(base.size());
        for (size_t i = 0; i < base.size(); ++i) t[i] = base[i] / params.temperature;
        std::vector<double> p = naive_softmax(t);
        const double top = *std::max_element(p.begin(), p.end());
        std::vector<bool> keep(base.size());
        for (size_t i = 0; i < base.size(); ++i) keep[i] = p[i] >= params.min_p * top;
        double kept_mass = 0;
        for (size_t i = 0; i < base.size(); ++i) kept_mass += keep[i] ? p[i] : 0;
        for (size_t i = 0; i < base.size(); ++i) { // nucleus over the min-p survivors, renormalised
            double above = 0;
            for (size_t j = 0; j < base.size(); ++j)
                if (keep[j] && t[j] > t[i]) above += p[j] / kept_mass;
            if (above >= params.top_p) keep[i] = false;
        }
        // torch.multinomial's draw: an exponential per token of the row, removed ones included;
        // the kept token with the largest p / q (the renormalisation cannot change the argmax).
        std::vector<float> q(base.size());
        reference_rng.exponential(q.data(), q.size());
        int expected = -1;
        for (size_t i = 0; i < base.size(); ++i)
            if (keep[i] && (expected < 0 || p[i] / q[i] > p[size_t(expected)] / q[size_t(expected)])) expected = int(i);
        EXPECT_EQ(got, expected) << "seed " << seed;
        EXPECT_EQ(rng.random(), reference_rng.random()) << "one row of draws per token";
    }
}

TEST(T3Sampler, SeedDeterminism) {
    std::vector<float> flat(200);
    for (size_t i = 0; i < flat.size(); ++i) flat[i] = float(std::sin(double(i))) * 0.5f;
    SamplingParams params;
    params.min_p = 0.0f;
    auto draw = [&](uint64_t seed) {
        Rng rng(seed);
        std::vector<int> tokens;
        for (int i = 0; i < 40; ++i) {
            std::vector<float> l = flat;
            tokens.push_back(choose_token(l, variant_spec(Variant::english).t3.sampler, {}, params, rng));
        }
        return tokens;
    };
    EXPECT_EQ(draw(42), draw(42));
    EXPECT_NE(draw(42), draw(43));
}

TEST(T3Sampler, GreedyTakesArgmaxWithoutTemperature) {
    SamplingParams params;
    params.greedy = true;
    params.temperature = 0.0f;
    EXPECT_NO_THROW(params.validate(1000));
    std::vector<float> l{0.1f, 5.0f, 4.9f};
    Rng rng(1);
    EXPECT_EQ(choose_token(l, variant_spec(Variant::english).t3.sampler, {}, params, rng), 1);
    std::vector<float> bad{0.1f, NAN};
    expect_error([&] { choose_token(bad, variant_spec(Variant::english).t3.sampler, {}, params, rng); }, "NaN");
}

TEST(T3Sampler, ParameterErrors) {
    const int limit = 4100;
    auto with = [](auto change) {
        SamplingParams p;
        change(p);
        return p;
    };
    EXPECT_NO_THROW(SamplingParams{}.validate(limit));
    expect_error([&] { with([](auto &p) { p.temperature = 0.0f; }).validate(limit); }, "temperature");
    expect_error([&] { with([](auto &p) { p.temperature = -1.0f; }).validate(limit); }, "temperature");
    expect_error([&] { with([](auto &p) { p.temperature = NAN; }).validate(limit); }, "temperature");
    expect_error([&] { with([](auto &p) { p.top_p = -0.1f; }).validate(limit); }, "top_p");
    expect_error([&] { with([](auto &p) { p.top_p = 1.01f; }).validate(limit); }, "top_p");
    expect_error([&] { with([](auto &p) { p.min_p = -0.1f; }).validate(limit); }, "min_p");
    expect_error([&] { with([](auto &p) { p.min_p = 1.5f; }).validate(limit); }, "min_p");
    expect_error([&] { with([](auto &p) { p.repetition_penalty = 0.0f; }).validate(limit); }, "repetition_penalty");
    expect_error([&] { with([](auto &p) { p.repetition_penalty = -2.0f; }).validate(limit); }, "repetition_penalty");
    expect_error([&] { with([](auto &p) { p.cfg_weight = -0.5f; }).validate(limit); }, "cfg_weight");
    expect_error([&] { with([](auto &p) { p.cfg_weight = INFINITY; }).validate(limit); }, "cfg_weight");
    expect_error([&] { with([](auto &p) { p.max_new_tokens = 0; }).validate(limit); }, "max_new_tokens");
    expect_error([&] { with([](auto &p) { p.max_new_tokens = limit + 1; }).validate(limit); }, "max_new_tokens");
    EXPECT_NO_THROW(with([](auto &p) { p.max_new_tokens = limit; }).validate(limit));
}

TEST(T3Text, FramingAndLimits) {
    const HParams hp = HParams::english();
    EXPECT_NO_THROW(validate_text_tokens(hp, {255, 46, 75, 0}));
    expect_error([&] { validate_text_tokens(hp, {255, 0}); }, "empty");
    expect_error([&] { validate_text_tokens(hp, {}); }, "framed");
    expect_error([&] { validate_text_tokens(hp, {46, 75, 0}); }, "framed");
    expect_error([&] { validate_text_tokens(hp, {255, 46, 75}); }, "framed");
    expect_error([&] { validate_text_tokens(hp, {255, 704, 0}); }, "vocabulary");
    expect_error([&] { validate_text_tokens(hp, {255, -3, 0}); }, "vocabulary");
    std::vector<int32_t> longest(size_t(hp.max_framed_text()), 2);
    longest.front() = 255;
    longest.back() = 0;
    EXPECT_NO_THROW(validate_text_tokens(hp, longest));
    longest.insert(longest.begin() + 1, 2);
    expect_error([&] { validate_text_tokens(hp, longest); }, "too long");
}

TEST(T3Tokens, DropInvalidTokens) {
    HParams english = HParams::english();
    EXPECT_EQ(drop_invalid_tokens({5, 6561, 7, 6563, 8, 6562, 9}, english), (std::vector<int32_t>{7, 8}));
    EXPECT_EQ(drop_invalid_tokens({1, 2, 6562}, english), (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(drop_invalid_tokens({1, 8000, 2}, english), (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(drop_invalid_tokens({6562, 6561, 3}, english), (std::vector<int32_t>{}));
    // Multilingual too: the reference keeps 6563..8193 and then fails in the flow's embedding.
    const HParams multilingual = variant_spec(Variant::multilingual).t3;
    EXPECT_EQ(drop_invalid_tokens({1, 8000, 2, 6562}, multilingual), (std::vector<int32_t>{1, 2}));
}

TEST(T3Tokens, TheFilterDecidesTokenByTokenWhatDropInvalidTokensKeeps) {
    using Verdict = SpeechTokenFilter::Verdict;
    const HParams english = HParams::english();
    SpeechTokenFilter filter(english);
    EXPECT_EQ(filter.push(5), Verdict::speak);
    EXPECT_EQ(filter.push(6563), Verdict::skip); // outside the speech units
    EXPECT_EQ(filter.push(6561), Verdict::restart);
    EXPECT_EQ(filter.push(6561), Verdict::skip); // only the first start-of-speech token counts
    EXPECT_EQ(filter.push(7), Verdict::speak);
    EXPECT_EQ(filter.push(6562), Verdict::end);
    EXPECT_EQ(filter.push(8), Verdict::end);
    // A start-of-speech token after the end empties the span, as tts.py's x[s:e] with s > e does.
    EXPECT_EQ(drop_invalid_tokens({1, 2, 6562, 6561, 3}, english), (std::vector<int32_t>{}));
    EXPECT_EQ(drop_invalid_tokens({1, 6561, 2, 6561, 3, 6562, 6561}, english), (std::vector<int32_t>{2, 3}));
}

TEST(T3Rope, Llama3FrequencyFactors) {
    const std::vector<float> f = llama3_rope_freq_factors(HParams::english());
    ASSERT_EQ(f.size(), 32u);
    for (int i = 0; i <= 14; ++i) EXPECT_FLOAT_EQ(f[size_t(i)], 1.0f) << i;
    EXPECT_NEAR(f[15], 1.5534, 1e-4); // spec t3.md §1.2
    EXPECT_NEAR(f[16], 2.6945, 1e-4);
    EXPECT_NEAR(f[17], 5.2573, 1e-4);
    for (int i = 18; i < 32; ++i) EXPECT_FLOAT_EQ(f[size_t(i)], 8.0f) << i;
}

TEST(T3Backbone, CausalMask) {
    const std::vector<ggml_fp16_t> m = causal_mask(2, 5, 2); // queries at positions 2 and 3
    for (int t = 0; t < 2; ++t)
        for (int j = 0; j < 5; ++j)
            EXPECT_EQ(ggml_fp16_to_fp32(m[size_t(t * 5 + j)]), j <= 2 + t ? 0.0f : -kInf) << t << "," << j;
}
