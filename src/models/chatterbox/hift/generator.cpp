#include "models/chatterbox/hift/generator.h"

#include "core/error.h"
#include "models/chatterbox/hift/padding_mask.h"
#include "modules/activations.h"

namespace chatterbox::hift {

namespace {

// ReflectionPad1d((1, 0)): x[1] is put before x[0]. x: ggml [T, C, 1], T >= 2.
ggml_tensor *reflect_pad_left_one(ggml_context *ctx, ggml_tensor *x) {
    ggml_tensor *second = ggml_view_3d(ctx, x, 1, x->ne[1], x->ne[2], x->nb[1], x->nb[2], x->nb[0]);
    return ggml_concat(ctx, ggml_cont(ctx, second), x, 0);
}

} // namespace

ResBlock::ResBlock(ModuleWeights &w, const std::string &prefix, int64_t channels, int kernel,
                   const std::array<int, 3> &dilations) {
    for (size_t i = 0; i < dilations.size(); ++i) {
        const std::string n = std::to_string(i);
        const int d = dilations[i];
        activations1.emplace_back(w, prefix + ".activations1." + n, channels);
        activations2.emplace_back(w, prefix + ".activations2." + n, channels);
        convs1.emplace_back(w, prefix + ".convs1." + n, channels, channels, kernel,
                            nn::ConvOptions().with_dilation(d).with_padding(d * (kernel - 1) / 2).with_weight_norm());
        convs2.emplace_back(w, prefix + ".convs2." + n, channels, channels, kernel,
                            nn::ConvOptions().with_padding((kernel - 1) / 2).with_weight_norm());
    }
}

ggml_tensor *ResBlock::operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *mask) const {
    for (size_t i = 0; i < convs1.size(); ++i) {
        ggml_tensor *xt = mask_padding(ctx, convs1[i](ctx, activations1[i](ctx, x)), mask);
        xt = mask_padding(ctx, convs2[i](ctx, activations2[i](ctx, xt)), mask);
        x = ggml_add(ctx, xt, x);
    }
    return x;
}

Generator::Generator(ModuleWeights &w, const HiftHParams &hparams) : hp(hparams) {
    const int64_t stft_channels = 2 * hp.spectrum_bins();
    conv_pre = nn::Conv1d(w, "conv_pre", hp.mel_bins, hp.base_channels, hp.conv_pre_kernel,
                          nn::ConvOptions().with_padding(hp.conv_pre_kernel / 2).with_weight_norm());
    for (int i = 0; i < 3; ++i) {
        const std::string n = std::to_string(i);
        const int64_t in = hp.base_channels >> i, out = hp.channels(i);
        const int rate = hp.upsample_rates[size_t(i)], kernel = hp.upsample_kernels[size_t(i)];
        ups[size_t(i)] = nn::ConvTranspose1d(
            w, "ups." + n, in, out, kernel,
            nn::ConvOptions().with_stride(rate).with_padding((kernel - rate) / 2).with_weight_norm());

        // The source STFT (one frame per output STFT frame) is strided down to this stage's rate:
        // stride = the upsampling still to come; the last stage is a 1x1 convolution.
        int remaining = 1;
        for (int j = i + 1; j < 3; ++j) remaining *= hp.upsample_rates[size_t(j)];
        const nn::ConvOptions down =
            remaining == 1 ? nn::ConvOptions() : nn::ConvOptions().with_stride(remaining).with_padding(remaining / 2);
        source_downs[size_t(i)] =
            nn::Conv1d(w, "source_downs." + n, stft_channels, out, remaining == 1 ? 1 : 2 * remaining, down);
        source_resblocks[size_t(i)] =
            ResBlock(w, "source_resblocks." + n, out, hp.source_resblock_kernels[size_t(i)], hp.dilations);
        for (size_t j = 0; j < hp.resblock_kernels.size(); ++j)
            resblocks.emplace_back(w, "resblocks." + std::to_string(3 * i + int(j)), out, hp.resblock_kernels[j],
                                   hp.dilations);
    }
    conv_post = nn::Conv1d(w, "conv_post", hp.channels(2), stft_channels, hp.conv_post_kernel,
                           nn::ConvOptions().with_padding(hp.conv_post_kernel / 2).with_weight_norm());
}

StageLengths Generator::stage_lengths(int64_t frames) const {
    StageLengths lengths{frames, 0, 0, 0};
    for (size_t i = 0; i < 3; ++i) lengths[i + 1] = ups[i].output_length(lengths[i]);
    lengths[3] += 1; // the reflection pad
    return lengths;
}

ggml_tensor *Generator::operator()(ggml_context *ctx, ggml_tensor *mel, ggml_tensor *source_stft,
                                   const StageMasks &masks) const {
    ggml_tensor *x = mask_padding(ctx, conv_pre(ctx, mel), masks[0]);
    for (size_t i = 0; i < 3; ++i) {
        ggml_tensor *mask = masks[i + 1];
        x = ups[i](ctx, nn::leaky_relu(ctx, x, hp.lrelu_slope));
        if (i == 2) x = reflect_pad_left_one(ctx, x);
        x = mask_padding(ctx, x, mask);
        ggml_tensor *si = source_resblocks[i](ctx, mask_padding(ctx, source_downs[i](ctx, source_stft), mask), mask);
        if (si->ne[0] != x->ne[0])
            fail("HiFT generator: stage ", i, " has ", x->ne[0], " samples but the source branch ", si->ne[0]);
        x = ggml_add(ctx, x, si);
        ggml_tensor *sum = nullptr;
        for (size_t j = 0; j < 3; ++j) {
            ggml_tensor *y = resblocks[3 * i + j](ctx, x, mask);
            sum = sum ? ggml_add(ctx, sum, y) : y;
        }
        x = ggml_scale(ctx, sum, 1.0f / 3.0f);
    }
    return conv_post(ctx, nn::leaky_relu(ctx, x, hp.final_lrelu_slope));
}

} // namespace chatterbox::hift
