#include "models/chatterbox/s3gen/flow_estimator.h"

#include "core/error.h"
#include "modules/activations.h"

namespace chatterbox::s3gen {

Estimator::Estimator(ModuleWeights &w, const std::string &prefix, const FlowHParams &hp)
    : time_points_(hp.time_points()), time_mlp_(w, prefix + ".time_mlp", hp),
      down_(w, prefix + ".down_blocks.0", hp.decoder_in(), hp.decoder_channels, hp),
      down_conv_(w, prefix + ".down_blocks.0.2", hp.decoder_channels, hp.decoder_channels, hp.decoder_conv_kernel,
                 hp.decoder_conv_kernel - 1, 0),
      up_(w, prefix + ".up_blocks.0", 2 * hp.decoder_channels, hp.decoder_channels, hp),
      up_conv_(w, prefix + ".up_blocks.0.2", hp.decoder_channels, hp.decoder_channels, hp.decoder_conv_kernel,
               hp.decoder_conv_kernel - 1, 0),
      final_block_(w, prefix + ".final_block", hp.decoder_channels, hp.decoder_channels, hp),
      final_proj_(w, prefix + ".final_proj", hp.decoder_channels, hp.mel_bins, 1, 0, 0) {
    for (int i = 0; i < hp.decoder_mid_blocks; ++i)
        mid_.emplace_back(w, prefix + ".mid_blocks." + std::to_string(i), hp.decoder_channels, hp.decoder_channels, hp);
    if (time_points_ > 1)
        time_mixer_ =
            nn::Linear(w, prefix + ".time_embed_mixer", time_points_ * hp.time_embed_dim(), hp.time_embed_dim(), false);
}

ggml_tensor *Estimator::operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *conditioning, ggml_tensor *sinusoids,
                                   nn::AttentionPath attention, EstimatorTimeTaps *taps,
                                   const AttentionSegments &segments) const {
    if (x->ne[1] != conditioning->ne[1] || x->ne[2] != conditioning->ne[2])
        fail("Estimator: sample [", x->ne[0], ", ", x->ne[1], ", ", x->ne[2], "] and conditioning [",
             conditioning->ne[0], ", ", conditioning->ne[1], ", ", conditioning->ne[2], "] differ in frames or rows");
    if (sinusoids->ne[1] != time_points_)
        fail("Estimator: ", sinusoids->ne[1], " time sinusoids given, this estimator embeds ", time_points_);
    const int64_t time_rows = sinusoids->ne[2];
    if (time_rows != 1 && time_rows != x->ne[2])
        fail("Estimator: ", time_rows, " rows of time sinusoids for ", x->ne[2], " rows (expected 1 or one per row)");
    ggml_tensor *per_time = time_mlp_(ctx, sinusoids); // [1024, P, S]
    ggml_tensor *time_embedding = per_time;
    if (time_points_ > 1) // cat[temb_t, temb_r] along the features: the columns of [1024, P] one after the other
        time_embedding = ggml_reshape_3d(
            ctx, time_mixer_(ctx, ggml_reshape_2d(ctx, per_time, per_time->ne[0] * time_points_, time_rows)),
            per_time->ne[0], 1, time_rows);
    if (taps) *taps = {per_time, time_embedding};
    // Every resnet block adds Linear(Mish(temb)); the Mish is shared.
    ggml_tensor *time_features = nn::mish(ctx, time_embedding);

    ggml_tensor *h = ggml_concat(ctx, x, conditioning, 0); // [x | mu | speaker | prompt], ggml [320, T, R]
    ggml_tensor *skip = down_(ctx, h, time_features, attention, segments);
    h = down_conv_(ctx, skip);
    for (const ResnetStage &stage : mid_) h = stage(ctx, h, time_features, attention, segments);
    // The down level keeps the length, so the reference's x[:, :, :skip_len] takes every frame.
    h = up_(ctx, ggml_concat(ctx, h, skip, 0), time_features, attention, segments);
    h = up_conv_(ctx, h);
    return final_proj_(ctx, final_block_(ctx, h));
}

} // namespace chatterbox::s3gen
