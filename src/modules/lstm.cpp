#include "modules/lstm.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace chatterbox::nn {

namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// out (rows, n) += x (rows, k_count, rows x_stride apart) m (k_count, n), all row-major; each
// output sums its terms in k order. Tiles of kRows rows by kColumns columns keep their sums in
// registers over the whole k loop (the weight row slice is read once per tile); tails take the
// plain loop. Cloned for AVX-512 and AVX2+FMA by target_clones, the CPU's chosen at load time (the
// baseline build's SSE2 loop ran the VoiceEncoder's LSTM at ~20 GFLOP/s).
[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void
accumulate_product(float *__restrict out, const float *__restrict x, int64_t x_stride, const float *__restrict m,
                   int64_t rows, int64_t k_count, int64_t n) {
    constexpr int64_t kRows = 4, kColumns = 32;
    const int64_t tiled_rows = rows - rows % kRows, tiled_columns = n - n % kColumns;
    for (int64_t r0 = 0; r0 < tiled_rows; r0 += kRows)
        for (int64_t j0 = 0; j0 < tiled_columns; j0 += kColumns) {
            float sums[kRows][kColumns];
            for (int64_t r = 0; r < kRows; ++r)
                for (int64_t j = 0; j < kColumns; ++j) sums[r][j] = out[(r0 + r) * n + j0 + j];
            for (int64_t k = 0; k < k_count; ++k) {
                const float *row = m + k * n + j0;
                for (int64_t r = 0; r < kRows; ++r) {
                    const float s = x[(r0 + r) * x_stride + k];
                    for (int64_t j = 0; j < kColumns; ++j) sums[r][j] += s * row[j];
                }
            }
            for (int64_t r = 0; r < kRows; ++r)
                for (int64_t j = 0; j < kColumns; ++j) out[(r0 + r) * n + j0 + j] = sums[r][j];
        }
    // The rows past the last whole tile, and the columns past the last whole tile of every row.
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t first = r < tiled_rows ? tiled_columns : 0;
        for (int64_t k = 0; k < k_count; ++k) {
            const float s = x[r * x_stride + k];
            const float *row = m + k * n;
            for (int64_t j = first; j < n; ++j) out[r * n + j] += s * row[j];
        }
    }
}

} // namespace

Lstm::Lstm(ModuleWeights &w, const std::string &prefix, int64_t input, int64_t hidden, int n_layers)
    : input(input), hidden(hidden) {
    if (input <= 0 || hidden <= 0 || n_layers <= 0)
        fail("nn::Lstm ", prefix, ": sizes must be positive (input ", input, ", hidden ", hidden, ", layers ", n_layers,
             ")");
    const int64_t gates = 4 * hidden;
    for (int k = 0; k < n_layers; ++k) {
        const std::string suffix = "_l" + std::to_string(k);
        Layer layer;
        layer.input = k == 0 ? input : hidden;
        layer.input_weight_t =
            transposed(w.host_f32(prefix + ".weight_ih" + suffix, {gates, layer.input}), gates, layer.input);
        layer.hidden_weight_t = transposed(w.host_f32(prefix + ".weight_hh" + suffix, {gates, hidden}), gates, hidden);
        layer.bias = w.host_f32(prefix + ".bias_ih" + suffix, {gates});
        const std::vector<float> bias_hh = w.host_f32(prefix + ".bias_hh" + suffix, {gates});
        for (int64_t j = 0; j < gates; ++j) layer.bias[size_t(j)] += bias_hh[size_t(j)];
        layers.push_back(std::move(layer));
    }
}

std::vector<float> Lstm::run_layer(const Layer &layer, const std::vector<float> &x, int64_t batch,
                                   int64_t steps) const {
    const int64_t H = hidden, G = 4 * hidden;
    // Input projections of every step at once (no dependency between steps), bias included.
    std::vector<float> projected(size_t(batch * steps * G));
    for (int64_t r = 0; r < batch * steps; ++r)
        std::copy(layer.bias.begin(), layer.bias.end(), projected.begin() + r * G);
    accumulate_product(projected.data(), x.data(), layer.input, layer.input_weight_t.data(), batch * steps, layer.input,
                       G);
    std::vector<float> h(size_t(batch * H), 0.0f), c(size_t(batch * H), 0.0f);
    std::vector<float> output(size_t(batch * steps * H));
    std::vector<float> gates(size_t(batch * G));
    for (int64_t t = 0; t < steps; ++t) {
        for (int64_t b = 0; b < batch; ++b) {
            const float *pre = projected.data() + (b * steps + t) * G;
            std::copy(pre, pre + G, gates.begin() + b * G);
        }
        // Recurrent term: each weight row is read once per step for a block of the batch.
        accumulate_product(gates.data(), h.data(), H, layer.hidden_weight_t.data(), batch, H, G);
        for (int64_t b = 0; b < batch; ++b) {
            const float *g = gates.data() + b * G;
            float *hb = h.data() + b * H;
            float *cb = c.data() + b * H;
            float *out = output.data() + (b * steps + t) * H;
            for (int64_t u = 0; u < H; ++u) {
                const float i = sigmoid(g[u]);
                const float f = sigmoid(g[H + u]);
                const float cell = std::tanh(g[2 * H + u]);
                const float o = sigmoid(g[3 * H + u]);
                cb[u] = f * cb[u] + i * cell;
                hb[u] = o * std::tanh(cb[u]);
                out[u] = hb[u];
            }
        }
    }
    return output;
}

std::vector<float> Lstm::final_hidden(const std::vector<float> &x, int64_t batch, int64_t steps, int threads) const {
    if (layers.empty()) fail("nn::Lstm: not initialised");
    if (batch <= 0 || steps <= 0) fail("nn::Lstm: empty input (batch ", batch, ", steps ", steps, ")");
    if (int64_t(x.size()) != batch * steps * input)
        fail("nn::Lstm: input has ", x.size(), " values, expected batch ", batch, " x steps ", steps, " x input ",
             input, " = ", batch * steps * input);
    // The sequences are independent: each thread runs every layer over its own rows.
    const int64_t groups = std::clamp<int64_t>(threads, 1, batch);
    std::vector<float> last(size_t(batch * hidden));
    auto run_rows = [&](int64_t group) {
        const int64_t first = batch * group / groups, rows = batch * (group + 1) / groups - first;
        std::vector<float> sequence(x.begin() + first * steps * input, x.begin() + (first + rows) * steps * input);
        for (const Layer &layer : layers) sequence = run_layer(layer, sequence, rows, steps);
        for (int64_t b = 0; b < rows; ++b)
            std::copy_n(sequence.begin() + ((b + 1) * steps - 1) * hidden, hidden, last.begin() + (first + b) * hidden);
    };
    std::vector<std::thread> helpers;
    for (int64_t group = 1; group < groups; ++group) helpers.emplace_back(run_rows, group);
    run_rows(0);
    for (std::thread &helper : helpers) helper.join();
    return last;
}

} // namespace chatterbox::nn
