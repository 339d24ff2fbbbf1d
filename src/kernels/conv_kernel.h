#pragma once
// The seam between nn::Conv1d and the CPU kernels that convolve directly, without im2col.
//
// A ConvKernel says whether this CPU runs it (CPUID at run time) and builds the convolution node of
// a stride-1, ungrouped, zero-padded convolution from the input and the plain f32 kernel. nn::Conv1d
// asks conv_kernels() at bind time (choose_conv_kernel, by the backend's KernelSelection: the same
// names enable and disable it as the matmul kernels') and, when one takes it, binds its weight in
// f32 as PyTorch stores it (no matmul kernel packs it); otherwise the convolution is im2col and one
// product (modules/conv1d.h). A new kernel is one file plus one line in conv_kernel.cpp's list.
//
//   const ConvKernel *k = choose_conv_kernel(selection);                   // nullptr: im2col + product
//   ggml_tensor *y = k->conv1d(ctx, x, kernel, bias, dilation, left, right); // ggml [T_out, C_out, B]

#include "core/backend.h"

#include "ggml.h"

#include <vector>

namespace chatterbox::kernels {

class ConvKernel {
  public:
    virtual ~ConvKernel() = default;
    virtual const char *name() const = 0;
    virtual bool runs_here() const = 0;
    virtual const char *why_not_here() const = 0;
    // x: f32 ggml [T, C_in, B], zero-padded by pad_left and pad_right samples (the padding is the
    // kernel's: x holds only the T real ones); kernel: f32 contiguous ggml [K, C_in, C_out] (PyTorch
    // (C_out, C_in, K)); bias: f32 [C_out] or nullptr. Returns f32 ggml [T + pads − dilation·(K − 1),
    // C_out, B]: y[t, o] = bias[o] + Σ_i Σ_k kernel[k, i, o]·x[t + dilation·k − pad_left, i], summed
    // in that order (i outer, k inner) for every output, so its bits do not depend on the output's
    // place, the batch or the thread count.
    virtual ggml_tensor *conv1d(ggml_context *ctx, ggml_tensor *x, ggml_tensor *kernel, ggml_tensor *bias,
                                int dilation, int pad_left, int pad_right) const = 0;
    // The FLOPs (2 per multiply-add) of a node its conv1d() made; 0 for any other node.
    virtual double node_flops(const ggml_tensor *node) const = 0;
};

// Every registered kernel, widest instruction set first.
const std::vector<const ConvKernel *> &conv_kernels();
// The first kernel that runs here and `selection` does not disable, or nullptr.
const ConvKernel *choose_conv_kernel(const KernelSelection &selection);
// nullptr when none has this name.
const ConvKernel *find_conv_kernel(const std::string &name);

} // namespace chatterbox::kernels
