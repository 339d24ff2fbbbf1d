#include "models/chatterbox/hift/f0_predictor.h"

#include "models/chatterbox/hift/padding_mask.h"
#include "modules/activations.h"

namespace chatterbox::hift {

F0Predictor::F0Predictor(ModuleWeights &w, const std::string &prefix, const HiftHParams &hp) {
    const nn::ConvOptions options = nn::ConvOptions().with_padding(hp.f0_kernel / 2).with_weight_norm();
    for (int i = 0; i < hp.f0_conv_layers; ++i) {
        const int64_t in = i == 0 ? hp.mel_bins : hp.base_channels;
        // The ELUs sit at the odd Sequential indices, so the convolutions are 0, 2, 4, ...
        condnet.emplace_back(w, prefix + ".condnet." + std::to_string(2 * i), in, hp.base_channels, hp.f0_kernel,
                             options);
    }
    classifier = nn::Linear(w, prefix + ".classifier", hp.base_channels, 1);
}

ggml_tensor *F0Predictor::operator()(ggml_context *ctx, ggml_tensor *mel, ggml_tensor *mask) const {
    ggml_tensor *x = mel;
    for (const nn::Conv1d &conv : condnet) x = nn::elu(ctx, mask_padding(ctx, conv(ctx, x), mask));
    // ggml [T, 512, B] -> [512, T, B] for the per-frame classifier.
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3));
    return ggml_abs(ctx, classifier(ctx, x));
}

} // namespace chatterbox::hift
