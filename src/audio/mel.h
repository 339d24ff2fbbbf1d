#pragma once
// Mel filterbanks: librosa.filters.mel (Slaney or HTK scale, optional Slaney area normalisation)
// and Kaldi's triangular banks as torchaudio.compliance.kaldi.get_mel_banks builds them.

#include "audio/matrix.h"

namespace chatterbox::audio {

enum class MelScale { slaney, htk };

// librosa.hz_to_mel / mel_to_hz. Slaney: linear below 1 kHz (200/3 Hz per mel), logarithmic above
// (27 mels per factor 6.4). HTK: 2595 * log10(1 + f/700).
double hz_to_mel(double hz, MelScale scale);
double mel_to_hz(double mel, MelScale scale);

struct MelFilterOptions {
    double sample_rate = 0;
    int n_fft = 0;
    int n_mels = 0;
    double fmin = 0.0;
    double fmax = -1.0; // negative = sample_rate / 2
    MelScale scale = MelScale::slaney;
    bool slaney_norm = true; // divide each triangle by its width in Hz / 2 (unit area)
};

// librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, htk, norm='slaney' or None) as float32:
// (n_mels, n_fft/2 + 1), row m is the triangle between mel points m and m+2.
Matrix librosa_mel_filters(const MelFilterOptions &options);

// Kaldi mel scale 1127 * ln(1 + f/700).
double kaldi_mel_scale(double hz);

// torchaudio.compliance.kaldi.get_mel_banks without VTLN, padded with a zero column for the
// Nyquist bin as fbank does: (num_bins, padded_window_size/2 + 1). Triangles are equally spaced
// on the Kaldi mel scale between low_freq and high_freq (high_freq <= 0 counts back from
// Nyquist), peak 1, not area-normalised.
Matrix kaldi_mel_banks(int num_bins, int padded_window_size, double sample_rate, double low_freq, double high_freq);

} // namespace chatterbox::audio
