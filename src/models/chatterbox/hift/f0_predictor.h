#pragma once
// F0 predictor of HiFT (ConvRNNF0Predictor, spec hift.md §2): five weight-normed Conv1d(k 3,
// pad 1) + ELU layers, a Linear(512 -> 1) per frame and abs -> f0 in Hz per mel frame.

#include "modules/module_weights.h"
#include "models/chatterbox/hift/hift_hparams.h"
#include "modules/conv1d.h"
#include "modules/linear.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace chatterbox::hift {

struct F0Predictor {
    std::vector<nn::Conv1d> condnet; // Sequential indices 0, 2, 4, 6, 8
    nn::Linear classifier;

    F0Predictor() = default;
    F0Predictor(ModuleWeights &w, const std::string &prefix, const HiftHParams &hp);

    // mel: ggml [T, 80, B] = PyTorch (B, 80, T) -> f0: ggml [1, T, B] (Hz, non-negative). mask
    // (padding_mask.h): ggml [T, 1, B] for mels padded to the longest, or nullptr.
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *mel, ggml_tensor *mask = nullptr) const;
};

} // namespace chatterbox::hift
