#pragma once
// The neural-source-filter excitation of HiFT (SineGen + SourceModuleHnNSF, spec hift.md §3),
// computed on the host: f0 per mel frame -> source s (480 samples per frame) in [-1, 1].
//
//   f0_up    = nearest-upsample(f0, x480)
//   theta_h  = 2 pi (cumsum(f0_up h / 24000) mod 1),                 h = 1..9
//   sine_h   = 0.1 sin(theta_h + phi_h)   (phi_1 = 0)
//   sine_h   = sine_h uv + (uv 0.003 + (1 - uv) 0.1/3) n_h,          uv = f0_up > 10 Hz, n_h ~ N(0, 1)
//   s        = tanh(l_linear(sine_1..9))
//
// The random draws (phi, n) are a SourceNoise: recorded by a golden run, or drawn from the
// engine's seeded generator as the official module draws them (draw_source_noise).

#include "core/torch_generator.h"
#include "models/chatterbox/hift/hift_hparams.h"
#include "modules/module_weights.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::hift {

// The random inputs of SineGen for one call of `samples` output samples.
struct SourceNoise {
    std::vector<float> phases; // (harmonics) initial phase per harmonic, U(-pi, pi); phases[0] is not used (0)
    std::vector<float> noise;  // (harmonics, samples) harmonic-major, N(0, 1) before scaling by the noise amplitude

    int64_t samples(int harmonics) const { return harmonics > 0 ? int64_t(noise.size()) / harmonics : 0; }
};

// Draws a SourceNoise from rng in the official call's order (SineGen, then SourceModuleHnNSF):
//   Uniform(-pi, pi).sample((1, harmonics, 1))  torch.rand(harmonics), low + u (high - low) in float
//   torch.randn_like(sine_waves)                 (1, harmonics, samples): the noise, harmonic-major
//   torch.randn_like(uv)                         (1, samples, 1): the noise branch inference drops,
//                                                drawn anyway so that rng ends where torch's does
// The first harmonic's phase is drawn and kept, as a recording of phase_vec keeps it; sine_source
// does not use it (phase_vec[:, 0, :] = 0).
SourceNoise draw_source_noise(TorchGenerator &rng, int harmonics, int64_t samples);

// l_linear (Linear 9 -> 1), kept on the host: the merge runs per sample in the source loop.
struct SourceMerge {
    std::vector<float> weight; // (harmonics)
    float bias = 0.0f;

    SourceMerge() = default;
    SourceMerge(ModuleWeights &w, const std::string &prefix, const HiftHParams &hp);
};

// Throws Error unless noise holds the phases and the noise of `frames` mel frames (480 samples each).
void check_source_noise(const SourceNoise &noise, int64_t frames, const HiftHParams &hp);

// The source s (f0.size() * 480 samples). Throws when the noise does not match the length.
std::vector<float> sine_source(const std::vector<float> &f0, const SourceNoise &noise, const SourceMerge &merge,
                               const HiftHParams &hp);

} // namespace chatterbox::hift
