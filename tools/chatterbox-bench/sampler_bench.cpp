#include "sampler_bench.h"

#include "core/torch_generator.h"
#include "models/chatterbox/t3/sampler.h"
#include "models/chatterbox/variant_spec.h"
#include "timing.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace chatterbox::bench {

namespace {

// The engine's draw before torch's generator (issue 48): the first index whose cumulative
// probability exceeds one uniform draw times the total. Kept here only to measure against.
int previous_draw(const std::vector<float> &probs, std::mt19937_64 &rng) {
    double total = 0;
    for (float p : probs) total += p;
    const double target = double(rng() >> 11) * 0x1.0p-53 * total;
    double cumulative = 0;
    for (size_t i = 0; i < probs.size(); ++i) {
        cumulative += probs[i];
        if (probs[i] > 0 && cumulative > target) return int(i);
    }
    return int(probs.size()) - 1;
}

double load_average() {
    double load[1] = {0};
    return getloadavg(load, 1) == 1 ? load[0] : -1;
}

// Microseconds per token of `draw` over the prepared rows.
template <typename Draw> double us_per_token(const std::vector<std::vector<float>> &rows, int tokens, Draw draw) {
    volatile int sink = 0;
    const Clock::time_point start = Clock::now();
    for (int t = 0; t < tokens; ++t) sink = sink + draw(rows[size_t(t) % rows.size()]);
    return ms_since(start) * 1000.0 / tokens;
}

} // namespace

nlohmann::json run_sampler_bench(const SamplerBenchArguments &options) {
    const t3::SamplerRecipe recipe = variant_spec(Variant::english).t3.sampler;
    const t3::SamplingParams params; // English defaults: temperature 0.8, min-p 0.05, penalty 1.2
    nlohmann::json rows_out = nlohmann::json::array();
    for (double sigma : options.sigmas) {
        std::mt19937_64 make(uint64_t(sigma * 1000) + 1);
        std::normal_distribution<float> normal(0.0f, float(sigma));
        std::vector<std::vector<float>> logits(64), probs;
        std::vector<int32_t> history;
        for (int i = 0; i < 50; ++i) history.push_back(int32_t(make() % uint64_t(options.vocab)));
        double kept = 0;
        for (std::vector<float> &row : logits) {
            row.resize(size_t(options.vocab));
            for (float &v : row) v = normal(make);
            std::vector<float> processed = row;
            t3::process_logits(processed, recipe, history, params);
            probs.push_back(t3::softmax(processed));
            for (float p : probs.back()) kept += p > 0 ? 1 : 0;
        }
        kept /= double(logits.size());
        std::vector<double> stages, torch_draw, previous, torch_token, previous_token;
        TorchGenerator torch_rng(1);
        std::mt19937_64 previous_rng(1);
        for (int round = 0; round < options.rounds; ++round) {
            stages.push_back(us_per_token(logits, options.tokens, [&](const std::vector<float> &row) {
                std::vector<float> processed = row;
                t3::process_logits(processed, recipe, history, params);
                return int(t3::softmax(processed).size());
            }));
            torch_draw.push_back(us_per_token(probs, options.tokens, [&](const std::vector<float> &p) {
                return torch_rng.multinomial_one(p.data(), p.size());
            }));
            previous.push_back(us_per_token(
                probs, options.tokens, [&](const std::vector<float> &p) { return previous_draw(p, previous_rng); }));
            torch_token.push_back(us_per_token(logits, options.tokens, [&](const std::vector<float> &row) {
                std::vector<float> processed = row;
                return t3::choose_token(processed, recipe, history, params, torch_rng);
            }));
            previous_token.push_back(us_per_token(logits, options.tokens, [&](const std::vector<float> &row) {
                std::vector<float> processed = row;
                t3::process_logits(processed, recipe, history, params);
                return previous_draw(t3::softmax(processed), previous_rng);
            }));
        }
        rows_out.push_back({{"sigma", sigma},
                            {"kept_tokens", kept},
                            {"stages_us", spread_of(stages).median},
                            {"torch_draw_us", spread_of(torch_draw).median},
                            {"previous_draw_us", spread_of(previous).median},
                            {"torch_token_us", spread_of(torch_token).median},
                            {"previous_token_us", spread_of(previous_token).median},
                            {"loadavg", load_average()}});
    }
    return rows_out;
}

} // namespace chatterbox::bench
