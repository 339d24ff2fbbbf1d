#include "models/chatterbox/campplus/campplus.h"

#include "core/error.h"
#include "core/graph.h"
#include "modules/activations.h"

#include <cmath>

namespace chatterbox::campplus {

namespace {

struct BlockConfig {
    int layers;
    int64_t in;
    int dilation;
    int64_t transit_out;
};
constexpr BlockConfig kBlocks[] = {{12, 128, 1, 256}, {24, 256, 2, 512}, {16, 512, 2, 512}};

} // namespace

CampPlus::CampPlus(const WeightStore &store, Backend &backend, const CampPlusHParams &hp, const std::string &prefix)
    : hp_(hp), weights_(std::make_unique<ModuleWeights>(store, prefix, backend)) {
    hp_.validate(); // the code below is written for the fixed sizes
    ModuleWeights &w = *weights_;
    head_ = FcmHead(w, "head");
    tdnn_ = nn::Conv1d(w, "xvector.tdnn.linear", 320, 128, 5,
                       nn::ConvOptions().with_stride(2).with_padding(2).without_bias());
    tdnn_bn_ = nn::BatchNorm1d(w, "xvector.tdnn.nonlinear.batchnorm", 128);
    for (size_t b = 0; b < std::size(kBlocks); ++b) {
        const BlockConfig &c = kBlocks[b];
        const std::string n = std::to_string(b + 1);
        blocks_.emplace_back(w, "xvector.block" + n, c.layers, c.in, c.dilation);
        transits_.emplace_back(w, "xvector.transit" + n, blocks_.back().out_channels(c.in), c.transit_out);
    }
    out_bn_ = nn::BatchNorm1d(w, "xvector.out_nonlinear.batchnorm", 512);
    dense_ = nn::Conv1d(w, "xvector.dense.linear", 1024, kEmbeddingSize, 1, nn::ConvOptions().without_bias());
    dense_bn_ = nn::BatchNorm1d(w, "xvector.dense.nonlinear.batchnorm", kEmbeddingSize, 1e-5f, /*affine=*/false);
    w.load();
}

CampPlus::~CampPlus() = default;

ggml_tensor *CampPlus::build(ggml_context *ctx, ggml_tensor *x, const SegmentPooling &pooling) const {
    ggml_tensor *y = head_(ctx, x); // [T, 320, 1]
    y = tdnn_bn_.relu(ctx, tdnn_(ctx, y));
    for (size_t b = 0; b < blocks_.size(); ++b) y = transits_[b](ctx, blocks_[b](ctx, y, pooling));
    y = out_bn_.relu(ctx, y); // [T', 512, 1]
    // Statistics pooling: mean and unbiased standard deviation over time.
    const int64_t frames = y->ne[0];
    y = ggml_reshape_2d(ctx, y, frames, y->ne[1]);
    ggml_tensor *mean = ggml_mean(ctx, y); // [1, 512]
    ggml_tensor *centred = ggml_sub(ctx, y, mean);
    ggml_tensor *variance = ggml_scale(ctx, ggml_sum_rows(ctx, ggml_sqr(ctx, centred)), 1.0f / float(frames - 1));
    ggml_tensor *stats = ggml_concat(ctx, ggml_reshape_1d(ctx, mean, mean->ne[1]),
                                     ggml_reshape_1d(ctx, ggml_sqrt(ctx, variance), variance->ne[1]), 0); // [1024]
    ggml_tensor *embedding = dense_(ctx, ggml_reshape_3d(ctx, stats, 1, stats->ne[0], 1));                // [1, 192, 1]
    return dense_bn_(ctx, embedding);
}

std::vector<float> CampPlus::embed(Backend &backend, const std::vector<float> &fbank, int64_t frames) const {
    if (frames < kMinFrames || frames > kMaxFrames)
        fail("CAMPPlus: the fbank has ", frames, " frames, expected ", kMinFrames, "..", kMaxFrames);
    if (int64_t(fbank.size()) != frames * kFbankBins)
        fail("CAMPPlus: the fbank has ", fbank.size(), " values, expected frames ", frames, " x ", kFbankBins, " = ",
             frames * kFbankBins);
    // (T, 80) -> ggml [T, 80] (time innermost), checking every value.
    std::vector<float> transposed(fbank.size());
    for (int64_t t = 0; t < frames; ++t)
        for (int64_t f = 0; f < kFbankBins; ++f) {
            const float v = fbank[size_t(t * kFbankBins + f)];
            if (!std::isfinite(v)) fail("CAMPPlus: fbank value ", v, " at frame ", t, ", bin ", f, " is not finite");
            transposed[size_t(f * frames + t)] = v;
        }
    const int64_t reduced = tdnn_.output_length(frames);
    const int64_t segments = SegmentPooling::segments(reduced);

    GraphRunner graph(backend);
    ggml_tensor *x = graph.input("fbank", GGML_TYPE_F32, {1, kFbankBins, frames});
    SegmentPooling pooling;
    pooling.pool = graph.input("segment_pool", GGML_TYPE_F32, {segments, reduced});
    pooling.expand = graph.input("segment_expand", GGML_TYPE_F32, {reduced, segments});
    ggml_tensor *out = build(graph.ctx(), x, pooling);
    graph.build({out});
    graph.set_input(x, transposed);
    graph.set_input(pooling.pool, SegmentPooling::pool_values(reduced));
    graph.set_input(pooling.expand, SegmentPooling::expand_values(reduced));
    graph.compute();
    return graph.read_f32(out);
}

} // namespace chatterbox::campplus
