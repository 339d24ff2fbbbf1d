#pragma once
// Multi-layer unidirectional LSTM, PyTorch nn.LSTM(batch_first=True) semantics, run on the host.
//
//   nn::Lstm lstm(w, "lstm", /*input=*/40, /*hidden=*/256, /*layers=*/3);
//   std::vector<float> h = lstm.final_hidden(x, batch, steps);   // x: (batch, steps, 40) -> (batch, 256)
//
// The recurrence is sequential, so a compute graph would be one tiny node chain per step; on the
// host it is a matrix-vector product per step over all sequences at once, with weights stored
// transposed so that the inner loops run over contiguous gate rows and vectorise.
// Gate order i, f, g, o; both biases; zero initial state.

#include "modules/module_weights.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::nn {

struct Lstm {
    struct Layer {
        int64_t input = 0;
        std::vector<float> input_weight_t;  // (input, 4 * hidden): weight_ih transposed
        std::vector<float> hidden_weight_t; // (hidden, 4 * hidden): weight_hh transposed
        std::vector<float> bias;            // (4 * hidden): bias_ih + bias_hh
    };
    std::vector<Layer> layers;
    int64_t input = 0;
    int64_t hidden = 0;

    Lstm() = default;
    // Reads `<prefix>.weight_ih_l{k}` (4H, in_k), `.weight_hh_l{k}` (4H, H), `.bias_ih_l{k}`, `.bias_hh_l{k}` (4H)
    // to the host (problems are recorded in `w` like any declared tensor).
    Lstm(ModuleWeights &w, const std::string &prefix, int64_t input, int64_t hidden, int n_layers);

    // x: (batch, steps, input) row-major, zero initial state. Returns the last layer's hidden state
    // after the final step, (batch, hidden). Throws Error for a size mismatch or empty input. Up to
    // `threads` threads take a share of the batch rows each; a row's bits do not depend on it.
    std::vector<float> final_hidden(const std::vector<float> &x, int64_t batch, int64_t steps, int threads = 1) const;

    // One layer over the whole sequence: (batch, steps, layer.input) -> (batch, steps, hidden).
    std::vector<float> run_layer(const Layer &layer, const std::vector<float> &x, int64_t batch, int64_t steps) const;
};

} // namespace chatterbox::nn
