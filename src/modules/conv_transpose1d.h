#pragma once
// 1-D transposed convolution, PyTorch nn.ConvTranspose1d (groups 1, dilation 1), exact in f32 and
// correct for any batch: one matrix multiplication, then ggml_col2im_1d scatter-adds the kernel
// taps and crops the padding (ggml_conv_transpose_1d takes neither padding nor a batch).
//
//   nn::ConvTranspose1d up(w, "mel2wav.ups.0", 512, 256, 16,
//                          nn::ConvOptions().with_stride(8).with_padding(4).with_weight_norm());
//   ggml_tensor *y = up(ctx, x);  // x: ggml [T, 512, B] = PyTorch (B, 512, T) -> ggml [8 T, 256, B]
//
// Stored weight: PyTorch (in, out, kernel); weight norm is over dim 0 (per input channel). The
// weight is re-laid out on the host at load and uploaded as f32.

#include "modules/module_weights.h"
#include "modules/conv_options.h"

#include "ggml.h"

#include <string>

namespace chatterbox::nn {

struct ConvTranspose1d {
    ggml_tensor *weight = nullptr; // ggml [C_in, K*C_out]: row oc*K + k holds W[:, oc, k]
    ggml_tensor *bias = nullptr;   // ggml [C_out], or nullptr
    int64_t in = 0;
    int64_t out = 0;
    int kernel = 0;
    ConvOptions options; // stride, pad_left (= PyTorch padding), output_padding, bias, weight_norm

    ConvTranspose1d() = default;
    ConvTranspose1d(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, int kernel,
                    const ConvOptions &options = {});

    // x: ggml [T, C_in, B] f32 -> ggml [output_length(T), C_out, B].
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
    // (T - 1) * stride - 2 * padding + kernel + output_padding
    int64_t output_length(int64_t input_length) const;
};

} // namespace chatterbox::nn
