#include "audio/mel.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>

namespace chatterbox::audio {
namespace {

// Slaney's auditory-toolbox constants, as librosa uses them.
constexpr double slaney_hz_per_mel = 200.0 / 3.0;
constexpr double slaney_min_log_hz = 1000.0;
constexpr double slaney_min_log_mel = slaney_min_log_hz / slaney_hz_per_mel; // 15
double slaney_log_step() { return std::log(6.4) / 27.0; }

} // namespace

double hz_to_mel(double hz, MelScale scale) {
    if (scale == MelScale::htk) return 2595.0 * std::log10(1.0 + hz / 700.0);
    if (hz >= slaney_min_log_hz) return slaney_min_log_mel + std::log(hz / slaney_min_log_hz) / slaney_log_step();
    return hz / slaney_hz_per_mel;
}

double mel_to_hz(double mel, MelScale scale) {
    if (scale == MelScale::htk) return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    if (mel >= slaney_min_log_mel) return slaney_min_log_hz * std::exp(slaney_log_step() * (mel - slaney_min_log_mel));
    return slaney_hz_per_mel * mel;
}

Matrix librosa_mel_filters(const MelFilterOptions &options) {
    const double sr = options.sample_rate;
    const double fmax = options.fmax < 0 ? sr / 2.0 : options.fmax;
    if (sr <= 0) fail("librosa_mel_filters: sample rate must be positive, got ", sr);
    if (options.n_fft < 2) fail("librosa_mel_filters: n_fft must be at least 2, got ", options.n_fft);
    if (options.n_mels < 1) fail("librosa_mel_filters: n_mels must be positive, got ", options.n_mels);
    if (!(options.fmin >= 0 && options.fmin < fmax && fmax <= sr / 2.0))
        fail("librosa_mel_filters: need 0 <= fmin < fmax <= sr/2, got fmin=", options.fmin, " fmax=", fmax, " sr=", sr);

    const int n_mels = options.n_mels;
    const int bins = options.n_fft / 2 + 1;

    // mel_frequencies: n_mels + 2 points evenly spaced in mel (np.linspace: start + i*step, last = stop).
    const double min_mel = hz_to_mel(options.fmin, options.scale);
    const double max_mel = hz_to_mel(fmax, options.scale);
    const int points = n_mels + 2;
    const double step = (max_mel - min_mel) / double(points - 1);
    std::vector<double> mel_hz(static_cast<size_t>(points));
    for (int i = 0; i < points; ++i) {
        const double mel = i == points - 1 ? max_mel : double(i) * step + min_mel;
        mel_hz[size_t(i)] = mel_to_hz(mel, options.scale);
    }

    // np.fft.rfftfreq(n_fft, 1/sr).
    const double bin_hz = 1.0 / (double(options.n_fft) * (1.0 / sr));
    Matrix weights(n_mels, bins);
    for (int m = 0; m < n_mels; ++m) {
        const double lower_width = mel_hz[size_t(m + 1)] - mel_hz[size_t(m)];
        const double upper_width = mel_hz[size_t(m + 2)] - mel_hz[size_t(m + 1)];
        const double area_norm = options.slaney_norm ? 2.0 / (mel_hz[size_t(m + 2)] - mel_hz[size_t(m)]) : 1.0;
        for (int k = 0; k < bins; ++k) {
            const double freq = double(k) * bin_hz;
            const double rising = -(mel_hz[size_t(m)] - freq) / lower_width;
            const double falling = (mel_hz[size_t(m + 2)] - freq) / upper_width;
            // librosa stores the triangle in float32 first, then scales it in place.
            const float triangle = float(std::max(0.0, std::min(rising, falling)));
            weights.at(m, k) = options.slaney_norm ? float(double(triangle) * area_norm) : triangle;
        }
    }
    return weights;
}

double kaldi_mel_scale(double hz) { return 1127.0 * std::log(1.0 + hz / 700.0); }

Matrix kaldi_mel_banks(int num_bins, int padded_window_size, double sample_rate, double low_freq, double high_freq) {
    if (num_bins <= 3) fail("kaldi_mel_banks: need more than 3 mel bins, got ", num_bins);
    if (padded_window_size < 2 || padded_window_size % 2 != 0)
        fail("kaldi_mel_banks: padded window size must be even, got ", padded_window_size);
    const double nyquist = 0.5 * sample_rate;
    if (high_freq <= 0.0) high_freq += nyquist;
    if (!(low_freq >= 0.0 && low_freq < nyquist && high_freq > 0.0 && high_freq <= nyquist && low_freq < high_freq))
        fail("kaldi_mel_banks: bad frequencies low=", low_freq, " high=", high_freq, " for Nyquist ", nyquist);

    const int fft_bins = padded_window_size / 2;
    const double fft_bin_width = sample_rate / padded_window_size;
    const double mel_low = kaldi_mel_scale(low_freq);
    const double mel_delta = (kaldi_mel_scale(high_freq) - mel_low) / (num_bins + 1);

    Matrix banks(num_bins, fft_bins + 1); // last column (Nyquist) stays 0
    for (int b = 0; b < num_bins; ++b) {
        const double left = mel_low + b * mel_delta;
        const double center = mel_low + (b + 1.0) * mel_delta;
        const double right = mel_low + (b + 2.0) * mel_delta;
        for (int k = 0; k < fft_bins; ++k) {
            const double mel = kaldi_mel_scale(fft_bin_width * k);
            const double up = (mel - left) / (center - left);
            const double down = (right - mel) / (right - center);
            banks.at(b, k) = float(std::max(0.0, std::min(up, down)));
        }
    }
    return banks;
}

} // namespace chatterbox::audio
