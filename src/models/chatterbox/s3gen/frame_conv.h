#pragma once
// 1-D convolution (PyTorch nn.Conv1d, stride 1, zero padding) on frame-major sequences
// ggml [C, T, B] = PyTorch (B, T, C) — the layout every other layer of the flow works in
// (linear layers, per-frame LayerNorm, attention), so no transposes are needed around a conv.
//
//   FrameConv1d conv(w, "decoder.estimator.down_blocks.0.2", 256, 256, 3, /*pad_left=*/2, /*pad_right=*/0);
//   ggml_tensor *y = conv(ctx, x); // x: ggml [256, T, B] -> ggml [256, T, B]
//
// On a CPU the weight is reordered at load to (out, k, in), so that the column of an output frame
// is a window of K input frames one after another: the product reads the padded input's windows in
// place, as a view of overlapping rows (no im2col; ~1 s of English's 12.4 s CFM on the Zen 5 VM was
// ggml's im2col and the padding of the transposed input). Elsewhere the frames a kernel covers are
// gathered into columns ggml [K*C_in, T_out, B] in PyTorch's (in, k) weight order by one copy of a
// strided view, then multiplied by the stored weight (any type ggml multiplies, kept as stored;
// PyTorch shape (out, in, k) or flattened (out, in*k)).

#include "modules/module_weights.h"

#include "ggml.h"

#include <string>

namespace chatterbox::s3gen {

struct FrameConv1d {
    ggml_tensor *weight = nullptr; // the matrix ggml [K*C_in, C_out]
    ggml_tensor *bias = nullptr;   // ggml [C_out]
    int64_t in = 0;
    int64_t out = 0;
    int kernel = 0;
    int pad_left = 0;
    int pad_right = 0;
    bool windows = false; // the weight is (out, k, in) and the product reads windows of frames

    FrameConv1d() = default;
    // Binds `<prefix>.weight` (out, in, kernel) and `<prefix>.bias` (out).
    FrameConv1d(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, int kernel, int pad_left,
                int pad_right);

    // x: f32 ggml [C_in, T, B] -> ggml [C_out, T + pad_left + pad_right - kernel + 1, B].
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
};

} // namespace chatterbox::s3gen
