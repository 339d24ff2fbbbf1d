#include "models/chatterbox/hift/hift_hparams.h"

#include "core/error.h"
#include "core/weight_store.h"

namespace chatterbox::hift {

const HparamTable<HiftHParams> &HiftHParams::fields() {
    using H = HiftHParams;
    using R = FieldRule;
    static const HparamTable<HiftHParams> table = {
        // The flow's 80-bin mel, and the 24 kHz output the pipeline and the voice builder assume.
        {"chatterbox.hift.mel_bins", &H::mel_bins, R::fixed},
        {"chatterbox.hift.base_channels", &H::base_channels, R::positive},
        {"chatterbox.hift.sample_rate", &H::sample_rate, R::fixed},
        {"chatterbox.hift.harmonics", &H::harmonics, R::positive},
        {"chatterbox.hift.sine_amp", &H::sine_amp, R::non_negative},
        {"chatterbox.hift.noise_std", &H::noise_std, R::non_negative},
        {"chatterbox.hift.voiced_threshold", &H::voiced_threshold, R::non_negative},
        {"chatterbox.hift.f0_conv_layers", &H::f0_conv_layers, R::positive},
        {"chatterbox.hift.f0_kernel", &H::f0_kernel, R::positive},
        {"chatterbox.hift.upsample_rates", &H::upsample_rates, R::positive},
        {"chatterbox.hift.upsample_kernels", &H::upsample_kernels, R::positive},
        {"chatterbox.hift.resblock_kernels", &H::resblock_kernels, R::positive},
        {"chatterbox.hift.source_resblock_kernels", &H::source_resblock_kernels, R::positive},
        {"chatterbox.hift.dilations", &H::dilations, R::positive},
        {"chatterbox.hift.conv_pre_kernel", &H::conv_pre_kernel, R::positive},
        {"chatterbox.hift.conv_post_kernel", &H::conv_post_kernel, R::positive},
        {"chatterbox.hift.lrelu_slope", &H::lrelu_slope, R::non_negative},
        {"chatterbox.hift.final_lrelu_slope", &H::final_lrelu_slope, R::non_negative},
        {"chatterbox.hift.istft_n_fft", &H::n_fft, R::positive},
        {"chatterbox.hift.istft_hop", &H::hop, R::positive},
        {"chatterbox.hift.magnitude_max", &H::magnitude_max, R::positive},
        {"chatterbox.hift.audio_limit", &H::audio_limit, R::positive},
        {"chatterbox.hift.fade_samples", &H::fade_samples, R::non_negative},
        {"chatterbox.hift.max_frames", &H::max_frames, R::positive},
    };
    return table;
}

void HiftHParams::validate() const {
    validate_fields(fields(), *this);
    if (base_channels % 8 != 0)
        fail("chatterbox.hift.base_channels is ", base_channels,
             "; the three upsampling stages halve it, so it must "
             "be a multiple of 8");
    if (n_fft % 2 != 0) fail("chatterbox.hift.istft_n_fft is ", n_fft, "; it must be even");
}

HiftHParams HiftHParams::from_checkpoint(const WeightStore &store, const std::string &prefix) {
    HiftHParams hp;
    const CheckpointShapes shapes(store, prefix);
    shapes.read("conv_pre.parametrizations.weight.original1", 3, 0, hp.base_channels);
    return shapes.validated(hp);
}

} // namespace chatterbox::hift
