#pragma once
// Hyper-parameters of the HiFT vocoder (spec hift.md §1): HiFTGenerator as s3gen.py builds it
// for Chatterbox, mel (80, T) at 50 Hz -> 24 kHz waveform, 480 samples per mel frame. Metadata
// keys "chatterbox.hift.*" (HiftHParams::fields()).

#include "models/chatterbox/hparam_fields.h"

#include <array>
#include <cstdint>
#include <string>

namespace chatterbox {
class WeightStore;
}

namespace chatterbox::hift {

struct HiftHParams {
    int64_t mel_bins = 80;
    int64_t base_channels = 512;
    int sample_rate = 24000;

    // Neural source filter (SourceModuleHnNSF / SineGen).
    int harmonics = 9;              // nb_harmonics 8 + the fundamental
    float sine_amp = 0.1f;          // nsf_alpha
    float noise_std = 0.003f;       // nsf_sigma, voiced samples
    float voiced_threshold = 10.0f; // Hz; f0 above it is voiced

    // F0 predictor (ConvRNNF0Predictor).
    int f0_conv_layers = 5;
    int f0_kernel = 3;

    // Generator.
    std::array<int, 3> upsample_rates = {8, 5, 3};
    std::array<int, 3> upsample_kernels = {16, 11, 7};
    std::array<int, 3> resblock_kernels = {3, 7, 11};
    std::array<int, 3> source_resblock_kernels = {7, 7, 11};
    std::array<int, 3> dilations = {1, 3, 5}; // every resblock and source resblock
    int conv_pre_kernel = 7;
    int conv_post_kernel = 7;
    float lrelu_slope = 0.1f;        // before each upsampling
    float final_lrelu_slope = 0.01f; // F.leaky_relu default before conv_post

    // iSTFT head.
    int n_fft = 16;
    int hop = 4;
    float magnitude_max = 100.0f; // magnitude = min(exp(raw), 100)
    float audio_limit = 0.99f;    // final clamp

    // S3Gen's trim_fade: the first 20 ms zeroed, the next 20 ms faded in.
    int64_t fade_samples = 480; // 24000 / 50

    // Longest mel accepted (60 s of audio, twice the flow's 1500-token limit): the last
    // upsampling stage holds 120 T + 1 samples x 64 channels and an im2col 11 times that.
    int64_t max_frames = 3000;

    int64_t spectrum_bins() const { return n_fft / 2 + 1; } // 9
    int64_t upsample_factor() const {
        return int64_t(upsample_rates[0]) * upsample_rates[1] * upsample_rates[2];
    }                                                                          // 120
    int64_t samples_per_frame() const { return upsample_factor() * hop; }      // 480
    int64_t channels(int stage) const { return base_channels >> (stage + 1); } // 256, 128, 64

    static HiftHParams standard() { return {}; }
    // The standard configuration with the sizes the HiFT checkpoint in store under prefix
    // ("s3gen.mel2wav.") declares by its tensor shapes.
    static HiftHParams from_checkpoint(const WeightStore &store, const std::string &prefix);

    static const HparamTable<HiftHParams> &fields();
    // The field rules, then the rules between fields; throws Error naming the keys.
    void validate() const;
};

} // namespace chatterbox::hift
