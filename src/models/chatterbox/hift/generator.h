#pragma once
// The HiFT generator up to conv_post (HiFTGenerator.decode, spec hift.md §4 steps 2–5): mel and
// the source's STFT -> 18 channels per STFT frame (9 log-magnitudes, 9 raw phases). The magnitude
// / phase heads and the iSTFT run on the host (istft_head.h).

#include "modules/module_weights.h"
#include "models/chatterbox/hift/hift_hparams.h"
#include "modules/conv1d.h"
#include "modules/conv_transpose1d.h"
#include "modules/snake.h"

#include "ggml.h"

#include <array>
#include <string>
#include <vector>

namespace chatterbox::hift {

// ResBlock (hifigan.py): per dilation d, x += conv2(snake2(conv1_d(snake1(x)))).
struct ResBlock {
    std::vector<nn::Snake> activations1, activations2;
    std::vector<nn::Conv1d> convs1, convs2;

    ResBlock() = default;
    ResBlock(ModuleWeights &w, const std::string &prefix, int64_t channels, int kernel,
             const std::array<int, 3> &dilations);

    // x: ggml [T, C, B] -> same shape. mask (padding_mask.h): ggml [T, 1, B] or nullptr.
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *mask = nullptr) const;
};

// The sample counts along the generator for a mel of T frames: [0] the mel's T, [1] and [2]
// after ups.0 and ups.1, [3] after ups.2 with its reflection pad (120 T + 1, the STFT frames).
using StageLengths = std::array<int64_t, 4>;

// Padding masks (padding_mask.h) at those four points, ggml [length, 1, B]; all nullptr for a
// batch whose mels have one length.
using StageMasks = std::array<ggml_tensor *, 4>;

struct Generator {
    HiftHParams hp;
    nn::Conv1d conv_pre;
    std::array<nn::ConvTranspose1d, 3> ups;
    std::array<nn::Conv1d, 3> source_downs;
    std::array<ResBlock, 3> source_resblocks;
    std::vector<ResBlock> resblocks; // 3 per stage
    nn::Conv1d conv_post;

    Generator() = default;
    // Binds the generator's tensors (conv_pre, ups, source_downs, ...) at the top of w's prefix.
    Generator(ModuleWeights &w, const HiftHParams &hp);

    StageLengths stage_lengths(int64_t frames) const;

    // mel: ggml [T, 80, B]; source_stft: ggml [120 T + 1, 18, B] (real parts, then imaginary)
    // -> conv_post output ggml [120 T + 1, 18, B].
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *mel, ggml_tensor *source_stft,
                            const StageMasks &masks = {}) const;
};

} // namespace chatterbox::hift
