#pragma once
// Building blocks of the flow's UNet-1D estimator (spec s3gen.md §5; decoder.py,
// matcha/decoder.py, matcha/transformer.py, diffusers Attention / GELU). Sequences are frame-major
// ggml [C, T, R] = PyTorch (R, T, C), R the CFG rows; the padding mask is all ones (one
// utterance per call), so the reference's `* mask` products are identities and left out.

#include "models/chatterbox/s3gen/flow_hparams.h"
#include "models/chatterbox/s3gen/frame_conv.h"
#include "modules/attention.h"
#include "modules/feed_forward.h"
#include "modules/linear.h"
#include "modules/module_weights.h"
#include "modules/norm.h"

#include <string>
#include <vector>

namespace chatterbox::s3gen {

// SinusoidalPosEmb(dim)(t) with the reference's scale 1000, computed in f32 as PyTorch does:
// [sin(scale·t·f_k), cos(scale·t·f_k)], f_k = exp(-k ln(10000) / (dim/2 - 1)), k < dim/2.
std::vector<float> timestep_sinusoid(float t, int64_t dim, float scale);

// TimestepEmbedding: linear_2(SiLU(linear_1(sinusoid))).
struct TimeEmbedding {
    nn::Linear linear_1, linear_2;

    TimeEmbedding() = default;
    TimeEmbedding(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *sinusoid) const; // ggml [320, ...] -> [1024, ...]
};

// CausalBlock1D: Mish(LayerNorm over channels(CausalConv1d(x))); `block.0` conv, `block.2` norm.
struct CausalBlock {
    FrameConv1d conv;
    nn::LayerNorm norm; // and Mish after it

    CausalBlock() = default;
    CausalBlock(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, const FlowHParams &hp);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x) const;
};

// Rows [first_row, first_row + rows) of a batch whose attention covers only their first `frames`
// frames (one request of a batch padded to the longest).
struct AttentionSegment {
    int64_t first_row = 0, rows = 0, frames = 0;
};
// Every row over every frame: no segments.
using AttentionSegments = std::vector<AttentionSegment>;

// CausalResnetBlock1D: h = block1(x) + mlp(temb); out = block2(h) + res_conv(x), mlp = Linear(Mish(temb)).
struct ResnetBlock {
    CausalBlock block1, block2;
    nn::Linear time_proj; // mlp.1
    FrameConv1d res_conv; // k = 1

    ResnetBlock() = default;
    ResnetBlock(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, const FlowHParams &hp);
    // time_features: Mish(temb), ggml [1024, 1, 1] shared by every row or [1024, 1, R] per row.
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *time_features) const;
};

// diffusers BasicTransformerBlock (layer_norm, self-attention only, "gelu" feed-forward):
// x += to_out(attention(LN1(x))); x += FF(LN3(x)). Projections to_q/to_k/to_v have no bias.
struct TransformerBlock {
    nn::LayerNorm norm1, norm3;
    nn::Linear to_q, to_k, to_v, to_out;
    nn::FeedForward feed_forward;
    int n_heads = 0;
    int64_t head_dim = 0;
    // The attention's products round as the block's weights' do (ModuleWeights::product_precision).
    kernels::ProductPrecision attention_precision = kernels::ProductPrecision::f32;

    TransformerBlock() = default;
    TransformerBlock(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp);
    // segments: empty, or the rows' requests (attention within each, over its frames).
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, nn::AttentionPath attention,
                            const AttentionSegments &segments = {}) const;
};

// A resnet block followed by its transformer blocks (one entry of down/mid/up_blocks).
struct ResnetStage {
    ResnetBlock resnet;
    std::vector<TransformerBlock> transformers;

    ResnetStage() = default;
    // Binds `<prefix>.0` (resnet) and `<prefix>.1.{j}` (transformer blocks).
    ResnetStage(ModuleWeights &w, const std::string &prefix, int64_t in, int64_t out, const FlowHParams &hp);
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *time_features, nn::AttentionPath attention,
                            const AttentionSegments &segments = {}) const;
};

} // namespace chatterbox::s3gen
