#pragma once
// 1-D convolution, PyTorch nn.Conv1d (zero padding), exact in f32 and correct for any batch: on a
// CPU with a direct convolution kernel (kernels/conv_kernel.h) a stride-1, ungrouped convolution is
// computed directly from the input (the kernel pads it); otherwise im2col (f32) + one matrix
// multiplication. A depthwise one (groups = channels) is kernels/depthwise_conv1d.h on a CPU, else
// im2col and a per-channel multiply-and-sum.
// Never ggml_conv_1d (wrong for batch > 1, rounds to f16).
//
//   nn::Conv1d conv(w, "flow.decoder.estimator.final_proj", 256, 80, 1);
//   nn::Conv1d pre(w, "mel2wav.conv_pre", 80, 512, 7, nn::ConvOptions().with_padding(3).with_weight_norm());
//   nn::Conv1d causal(w, "...block.0", 256, 256, 3, nn::ConvOptions().with_causal_padding());
//   nn::Conv1d dw(w, "...fsmn_block", 1280, 1280, 31, nn::ConvOptions().with_groups(1280).without_bias());
//   ggml_tensor *y = conv(ctx, x);   // x: ggml [T, C_in, B] = PyTorch (B, C_in, T) -> ggml [T_out, C_out, B]
//
// Stored weight: PyTorch (out, in / groups, kernel) in any float type, or — so that a converter can
// quantise it (q8_0 rows must hold whole 32-value blocks) — flattened to (out, in * kernel).
// Depthwise weights, and those of the direct kernel, are uploaded as f32.

#include "modules/conv_options.h"
#include "modules/module_weights.h"

#include "ggml.h"

#include <string>

namespace chatterbox::nn {

struct Conv1d {
    ggml_tensor *weight = nullptr; // groups 1: the matrix ggml [K*C_in, C_out]; depthwise: ggml [K, 1, C]
    ggml_tensor *bias = nullptr;   // ggml [C_out], or nullptr
    int64_t in = 0;
    int64_t out = 0;
    int kernel = 0;
    ConvOptions options;                         // with pad_left/pad_right resolved (causal padding applied)
    const kernels::ConvKernel *direct = nullptr; // computes it directly, or nullptr (im2col)
    bool on_cpu = false;                         // depthwise: kernels/depthwise_conv1d.h, else im2col

    Conv1d() = default;
    Conv1d(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, int kernel,
           const ConvOptions &options = {});

    // x: ggml [T, C_in, B] f32 -> ggml [output_length(T), C_out, B].
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
    int64_t output_length(int64_t input_length) const;

  private:
    bool depthwise() const { return options.groups > 1; }
};

} // namespace chatterbox::nn
