#pragma once
// A depthwise 1-D convolution (groups = channels, one K-tap kernel per channel) as one ggml custom
// op for the CPU backend, each output read straight from the input. ggml has no such op: built from
// im2col, mul and sum_rows it writes K copies of the input twice and reads them back (the
// S3Tokenizer's FSMN memory, 31 taps over 1280 channels: about 80 MB per layer and window for
// 20 MFLOP of arithmetic).
//
// Each output is summed in the same order (tap 0 first) whatever its place, the batch or the thread
// count, so a row's bits do not depend on how the threads split the channels.

#include "ggml.h"

namespace chatterbox::kernels {

// x: f32 ggml [T, C, B], zero-padded by pad_left and pad_right samples (x holds only the T real
// ones); kernel: f32 [K, C] (PyTorch's (C, 1, K)), made contiguous if it is not. Returns f32 ggml
// [T_out, C, B] with T_out = (T + pads − dilation·(K − 1) − 1) / stride + 1 and
// y[t, c] = Σ_k kernel[k, c]·x[t·stride + dilation·k − pad_left, c].
ggml_tensor *depthwise_conv1d(ggml_context *ctx, ggml_tensor *x, ggml_tensor *kernel, int stride, int dilation,
                              int pad_left, int pad_right);

// The FLOPs (2 per multiply-add) of a node depthwise_conv1d() made; 0 for any other node.
double depthwise_conv1d_flops(const ggml_tensor *node);

} // namespace chatterbox::kernels
