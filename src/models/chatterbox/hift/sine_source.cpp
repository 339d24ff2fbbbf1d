#include "models/chatterbox/hift/sine_source.h"

#include "core/error.h"

#include <cmath>

namespace chatterbox::hift {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

SourceNoise draw_source_noise(TorchGenerator &rng, int harmonics, int64_t samples) {
    SourceNoise out;
    // torch.distributions.Uniform keeps low and high as float32 tensors.
    const float low = float(-kPi), high = float(kPi);
    out.phases = rng.rand(size_t(harmonics));
    for (float &phase : out.phases) phase = low + phase * (high - low);
    out.noise = rng.randn(size_t(harmonics) * size_t(samples));
    rng.randn(size_t(samples)); // SourceModuleHnNSF's noise branch, unused by inference
    return out;
}

SourceMerge::SourceMerge(ModuleWeights &w, const std::string &prefix, const HiftHParams &hp)
    : weight(w.host_f32(prefix + ".weight", {1, hp.harmonics})), bias(w.host_f32(prefix + ".bias", {1})[0]) {}

void check_source_noise(const SourceNoise &noise, int64_t frames, const HiftHParams &hp) {
    const int harmonics = hp.harmonics;
    const int64_t samples = frames * hp.samples_per_frame();
    if (noise.phases.size() != size_t(harmonics))
        fail("HiFT source: ", noise.phases.size(), " initial phases given, expected ", harmonics);
    if (noise.noise.size() != size_t(harmonics * samples))
        fail("HiFT source: noise of ", noise.noise.size(), " values given, expected ", harmonics, " x ", samples, " (",
             frames, " mel frames x ", hp.samples_per_frame(), " samples)");
}

std::vector<float> sine_source(const std::vector<float> &f0, const SourceNoise &noise, const SourceMerge &merge,
                               const HiftHParams &hp) {
    const int harmonics = hp.harmonics;
    const int64_t upsample = hp.samples_per_frame();
    const int64_t samples = int64_t(f0.size()) * upsample;
    check_source_noise(noise, int64_t(f0.size()), hp);
    if (merge.weight.size() != size_t(harmonics)) fail("HiFT source: l_linear has ", merge.weight.size(), " weights");

    // Accumulated per sample across harmonics: sum_h w_h sine_h, in double, rounded once.
    std::vector<double> merged(size_t(samples), double(merge.bias));
    const float unvoiced_amp = float(double(hp.sine_amp) / 3.0); // sine_amp / 3 is a Python float
    const float two_pi = float(2.0 * kPi);
    for (int h = 0; h < harmonics; ++h) {
        // As torch: F = f0 (h+1) / sr in float32; cumsum accumulates in double (CPU acc_type)
        // and stores float32; `% 1` and the phase arithmetic stay in float32.
        const float phase0 = h == 0 ? 0.0f : noise.phases[size_t(h)];
        const float *n = noise.noise.data() + size_t(h) * size_t(samples);
        double cumulative = 0.0;
        for (int64_t i = 0; i < samples; ++i) {
            const float f = f0[size_t(i / upsample)];
            cumulative += double(f * float(h + 1) / float(hp.sample_rate));
            const float c = float(cumulative);
            const float theta = two_pi * (c - std::floor(c));
            const bool voiced = f > hp.voiced_threshold;
            const float sine = voiced ? hp.sine_amp * std::sin(theta + phase0) : 0.0f;
            const float amp = voiced ? hp.noise_std : unvoiced_amp;
            merged[size_t(i)] += double(merge.weight[size_t(h)]) * double(sine + amp * n[i]);
        }
    }
    std::vector<float> s(static_cast<size_t>(samples));
    for (int64_t i = 0; i < samples; ++i) s[size_t(i)] = std::tanh(float(merged[size_t(i)]));
    return s;
}

} // namespace chatterbox::hift
