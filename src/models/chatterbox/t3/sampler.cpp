#include "models/chatterbox/t3/sampler.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace chatterbox::t3 {

namespace {

constexpr float kRemoved = -INFINITY;

// Indices of the logits not removed, ordered by value, ascending; ties keep index order so results
// are reproducible.
std::vector<size_t> ascending_order_of_kept(const std::vector<float> &logits) {
    std::vector<size_t> order;
    order.reserve(logits.size());
    for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] != kRemoved) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] < logits[b]; });
    return order;
}

void check_logits(const std::vector<float> &logits) {
    if (logits.empty()) fail("T3 sampling: empty logits");
    bool any_finite = false;
    for (size_t i = 0; i < logits.size(); ++i) {
        if (std::isnan(logits[i])) fail("T3 sampling: logit ", i, " is NaN");
        if (logits[i] == INFINITY) fail("T3 sampling: logit ", i, " is +inf");
        any_finite = any_finite || std::isfinite(logits[i]);
    }
    if (!any_finite) fail("T3 sampling: every logit is -inf");
}

} // namespace

SamplerRecipe SamplerRecipe::tts() {
    using S = LogitsStage;
    SamplerRecipe r{{S::repetition_penalty, S::temperature, S::min_p, S::top_p}, true, true, {}};
    r.defaults.top_p = 1.0f; // tts.py generate(): off
    return r;
}

SamplerRecipe SamplerRecipe::tts_turbo() {
    using S = LogitsStage;
    SamplerRecipe r{{S::temperature, S::top_k, S::top_p, S::repetition_penalty}, false, false, {}};
    // tts_turbo.py generate(): temperature 0.8, top_k 1000, top_p 0.95, repetition_penalty 1.2
    // (min_p 0 and cfg_weight 0, which it ignores anyway).
    r.defaults.top_k = 1000;
    r.defaults.top_p = 0.95f;
    r.defaults.min_p = 0.0f;
    r.defaults.cfg_weight = 0.0f;
    return r;
}

SamplingParams SamplingParams::with_defaults(const SamplingParams &defaults) const {
    SamplingParams p = *this;
    if (p.top_k == 0) p.top_k = defaults.top_k;
    if (p.top_p == 0) p.top_p = defaults.top_p;
    return p;
}

void SamplingParams::validate(int max_new_tokens_limit) const {
    if (!greedy && !(std::isfinite(temperature) && temperature > 0))
        fail("temperature must be > 0, got ", temperature, " (ask for greedy decoding to take the argmax)");
    if (top_k < 0) fail("top_k must be >= 0 (0 = the model's default), got ", top_k);
    if (!(top_p >= 0 && top_p <= 1)) fail("top_p must be in [0, 1] (0 = the model's default), got ", top_p);
    if (!(min_p >= 0 && min_p <= 1)) fail("min_p must be in [0, 1], got ", min_p);
    if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0))
        fail("repetition_penalty must be > 0, got ", repetition_penalty);
    if (!(std::isfinite(cfg_weight) && cfg_weight >= 0)) fail("cfg_weight must be >= 0, got ", cfg_weight);
    if (max_new_tokens < 1 || max_new_tokens > max_new_tokens_limit)
        fail("max_new_tokens must be in [1, ", max_new_tokens_limit, "] (the model's speech positions), got ",
             max_new_tokens);
    if (!(std::isfinite(guards.speech_per_text_token) && guards.speech_per_text_token >= 0))
        fail("speech tokens per text token must be >= 0 (0: the model's rate), got ", guards.speech_per_text_token);
}

SamplingParams SamplingParams::guarded() {
    SamplingParams p;
    p.guards.length_bound = true;
    p.guards.stops = true;
    return p;
}

std::vector<float> cfg_combine(const float *cond, const float *uncond, size_t n, float cfg_weight) {
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = cond[i] + cfg_weight * (cond[i] - uncond[i]);
    return out;
}

void apply_repetition_penalty(std::vector<float> &logits, const std::vector<int32_t> &history, float penalty) {
    const std::set<int32_t> distinct(history.begin(), history.end());
    for (int32_t id : distinct) {
        if (id < 0 || size_t(id) >= logits.size())
            fail("repetition penalty: token ", id, " is outside the ", logits.size(), " logits");
        float &l = logits[size_t(id)];
        l = l < 0 ? l * penalty : l / penalty;
    }
}

void apply_temperature(std::vector<float> &logits, float temperature) {
    if (temperature == 1.0f) return;
    for (float &l : logits) l /= temperature;
}

std::vector<float> softmax(const std::vector<float> &logits) {
    const float max = *std::max_element(logits.begin(), logits.end());
    std::vector<float> probs(logits.size(), 0.0f);
    if (max == -INFINITY) return probs;
    // A removed token weighs exp(-inf) = 0, added or not: skipping them leaves the later calls of a
    // step (after min_p) a few hundred of 8194 exponentials.
    double sum = 0;
    for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] != kRemoved) sum += std::exp(double(logits[i]) - double(max));
    for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] != kRemoved) probs[i] = float(std::exp(double(logits[i]) - double(max)) / sum);
    return probs;
}

void apply_top_k(std::vector<float> &logits, int top_k) {
    if (top_k <= 0 || size_t(top_k) >= logits.size()) return;
    std::vector<float> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<float>());
    const float kth = sorted[size_t(top_k - 1)];
    for (float &l : logits)
        if (l < kth) l = kRemoved;
}

void apply_min_p(std::vector<float> &logits, float min_p) {
    const std::vector<float> probs = softmax(logits);
    const size_t top = size_t(argmax(logits));
    const float threshold = min_p * probs[top];
    for (size_t i = 0; i < logits.size(); ++i)
        if (i != top && probs[i] < threshold) logits[i] = kRemoved;
}

void apply_top_p(std::vector<float> &logits, float top_p) {
    const std::vector<float> probs = softmax(logits);
    if (top_p >= 1.0f) { // the loop below would remove the tokens of probability 0 (first in order) and stop
        for (size_t i = 0; i < logits.size(); ++i)
            if (probs[i] == 0.0f) logits[i] = kRemoved;
        return;
    }
    // Tokens already removed (by min_p: most of them) have probability 0, so they would sort first
    // and change nothing; only the others are sorted.
    const std::vector<size_t> order = ascending_order_of_kept(logits);
    const double limit = 1.0 - double(top_p);
    double cumulative = 0;
    for (size_t k = 0; k + 1 < order.size(); ++k) { // the last (top) token always stays
        cumulative += probs[order[k]];
        if (cumulative > limit) break;
        logits[order[k]] = kRemoved;
    }
}

int argmax(const std::vector<float> &values) {
    if (values.empty()) fail("argmax of an empty vector");
    return int(std::max_element(values.begin(), values.end()) - values.begin());
}

int sample_multinomial(const std::vector<float> &probs, Rng &rng) {
    bool any_positive = false;
    for (size_t i = 0; i < probs.size(); ++i) {
        if (!(probs[i] >= 0) || !std::isfinite(probs[i]))
            fail("multinomial: probability ", i, " is invalid (", probs[i], ")");
        any_positive = any_positive || probs[i] > 0;
    }
    if (!any_positive) fail("multinomial: all ", probs.size(), " probabilities are zero");
    return rng.multinomial_one(probs.data(), probs.size());
}

void process_logits(std::vector<float> &logits, const SamplerRecipe &recipe, const std::vector<int32_t> &history,
                    const SamplingParams &requested, std::vector<float> *penalized) {
    const SamplingParams params = requested.with_defaults(recipe.defaults);
    for (LogitsStage stage : recipe.stages) {
        switch (stage) {
        case LogitsStage::repetition_penalty:
            apply_repetition_penalty(logits, history, params.repetition_penalty);
            if (penalized) *penalized = logits;
            break;
        case LogitsStage::temperature:
            if (!params.greedy) apply_temperature(logits, params.temperature);
            break;
        case LogitsStage::top_k:
            apply_top_k(logits, params.top_k);
            break;
        case LogitsStage::min_p:
            apply_min_p(logits, params.min_p);
            break;
        case LogitsStage::top_p:
            apply_top_p(logits, params.top_p);
            break;
        }
    }
}

int choose_token(std::vector<float> &logits, const SamplerRecipe &recipe, const std::vector<int32_t> &history,
                 const SamplingParams &params, Rng &rng, std::vector<float> *penalized) {
    check_logits(logits);
    process_logits(logits, recipe, history, params, penalized);
    return params.greedy ? argmax(logits) : sample_multinomial(softmax(logits), rng);
}

} // namespace chatterbox::t3
