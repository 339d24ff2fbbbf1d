#pragma once
// CAMPPlus building blocks (spec campplus.md §2). Layouts: 2-D maps are ggml [T, F, C, 1] =
// PyTorch (1, C, F, T); 1-D sequences are ggml [T, C, 1] = PyTorch (1, C, T).

#include "modules/conv1d.h"
#include "modules/module_weights.h"
#include "modules/norm.h"

#include "ggml.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::campplus {

// nn.Conv2d without bias, zero padding 1 for 3x3 kernels and 0 for 1x1, stride (freq_stride, 1).
// Where a direct convolution kernel runs (kernels/conv_kernel.h), each output frequency row is a 1-D
// convolution over time of the K input rows it reads (their channels side by side: a K-fold copy of
// the input, where im2col makes a K²-fold one), all rows one batch; else im2col (f32) + one product.
struct Conv2d {
    ggml_tensor *weight = nullptr; // ggml [K, K, C_in, C_out] = PyTorch (C_out, C_in, K, K); or, direct:
                                   // ggml [K_time, C_in·K_freq, C_out] = (C_out, K_freq, C_in, K_time)
    const kernels::ConvKernel *direct = nullptr;
    int64_t in = 0, out = 0;
    int kernel = 0, freq_stride = 1;

    Conv2d() = default;
    Conv2d(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, int kernel, int freq_stride);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const; // ggml [T, F, C_in, 1] -> [T, F', C_out, 1]
};

// BatchNorm over the channels of a 2-D map (nn.BatchNorm2d, inference mode, folded), then ReLU if
// asked.
ggml_tensor *batch_norm_2d(ggml_context *ctx, const nn::BatchNorm1d &bn, ggml_tensor *x, bool relu);

// relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)); the shortcut is a strided 1x1 conv + BN
// when the block downsamples frequency, identity otherwise.
struct BasicResBlock {
    Conv2d conv1, conv2, shortcut;
    nn::BatchNorm1d bn1, bn2, shortcut_bn;
    bool projected_shortcut = false;

    BasicResBlock() = default;
    BasicResBlock(ModuleWeights &w, const std::string &prefix, int64_t channels, int freq_stride);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
};

// The FCM head: fbank ggml [T, 80, 1] -> ggml [T, 320, 1] (channel-major c * 10 + f).
struct FcmHead {
    Conv2d conv1, conv2;
    nn::BatchNorm1d bn1, bn2;
    std::vector<BasicResBlock> blocks; // layer1.{0,1}, layer2.{0,1}

    FcmHead() = default;
    FcmHead(ModuleWeights &w, const std::string &prefix);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
};

// The CAM context of every frame is mean_t(x) + (average over its 100-frame segment), so it takes
// one value per segment: pool (f32 ggml [T, S]) maps frames to per-segment contexts, expand
// (f32 ggml [S, T], one-hot) maps them back to frames. Graph inputs, filled by values_for().
struct SegmentPooling {
    static constexpr int64_t kSegmentFrames = 100;
    ggml_tensor *pool = nullptr;
    ggml_tensor *expand = nullptr;

    static int64_t segments(int64_t frames) { return (frames + kSegmentFrames - 1) / kSegmentFrames; }
    // Host values of pool and expand for a sequence of `frames` frames.
    static std::vector<float> pool_values(int64_t frames);
    static std::vector<float> expand_values(int64_t frames);
};

// CAMDenseTDNNLayer: BN-ReLU -> 1x1 conv (C_in -> 128) -> BN-ReLU -> CAM layer (-> 32 channels).
struct CamDenseTdnnLayer {
    nn::BatchNorm1d bn1, bn2;
    nn::Conv1d linear1;            // (128, C_in, 1), no bias
    nn::Conv1d linear_local;       // (32, 128, 3), dilation d, no bias
    nn::Conv1d context1, context2; // cam_layer.linear1 / linear2 (with bias)

    CamDenseTdnnLayer() = default;
    CamDenseTdnnLayer(ModuleWeights &w, const std::string &prefix, int64_t in, int dilation);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, const SegmentPooling &pooling) const;
};

// Dense block: each layer's 32-channel output is concatenated to its input.
struct DenseTdnnBlock {
    std::vector<CamDenseTdnnLayer> layers;

    DenseTdnnBlock() = default;
    DenseTdnnBlock(ModuleWeights &w, const std::string &prefix, int n_layers, int64_t in, int dilation);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, const SegmentPooling &pooling) const;
    int64_t out_channels(int64_t in) const { return in + 32 * int64_t(layers.size()); }
};

// TransitLayer: BN-ReLU -> 1x1 conv without bias.
struct TransitLayer {
    nn::BatchNorm1d bn;
    nn::Conv1d linear;

    TransitLayer() = default;
    TransitLayer(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
};

} // namespace chatterbox::campplus
