#include "models/chatterbox/hift/spectral.h"

#include "audio/stft.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>

namespace chatterbox::hift {

std::vector<float> source_stft(const std::vector<float> &source, const HiftHParams &hp) {
    audio::StftOptions options;
    options.n_fft = hp.n_fft;
    options.hop = hp.hop;
    options.center = audio::CenterPad::reflect;
    const audio::Spectrogram spec = audio::stft(source, options);
    const int64_t bins = spec.bins, frames = spec.frames;
    std::vector<float> out(size_t(2 * bins * frames));
    for (int64_t b = 0; b < bins; ++b)
        for (int64_t f = 0; f < frames; ++f) {
            out[size_t(b * frames + f)] = spec.at(f, b).real();
            out[size_t((bins + b) * frames + f)] = spec.at(f, b).imag();
        }
    return out;
}

std::vector<float> heads_to_wave(const std::vector<float> &heads, int64_t frames, const HiftHParams &hp) {
    const int64_t bins = hp.spectrum_bins();
    if (heads.size() != size_t(2 * bins * frames))
        fail("HiFT iSTFT head: ", heads.size(), " values, expected ", 2 * bins, " x ", frames);
    audio::Spectrogram spec;
    spec.frames = frames;
    spec.bins = bins;
    spec.values.resize(size_t(frames * bins));
    for (int64_t b = 0; b < bins; ++b)
        for (int64_t f = 0; f < frames; ++f) {
            // float32 as the reference: exp, clip, sin of the raw channel, then cos/sin of that.
            const float magnitude = std::min(std::exp(heads[size_t(b * frames + f)]), hp.magnitude_max);
            const float phase = std::sin(heads[size_t((bins + b) * frames + f)]);
            spec.at(f, b) = {magnitude * std::cos(phase), magnitude * std::sin(phase)};
        }
    std::vector<float> wave = audio::istft(spec, hp.n_fft, hp.hop);
    for (float &v : wave) v = std::clamp(v, -hp.audio_limit, hp.audio_limit);
    return wave;
}

} // namespace chatterbox::hift
