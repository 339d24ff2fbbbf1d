#pragma once
// Short-time Fourier transforms on kissfft: the STFT of the feature front ends (Hann window,
// optional centre padding, as torch.stft / librosa.stft) and the inverse STFT of the HiFT vocoder
// (torch.istft with center=True).

#include "audio/matrix.h"

#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

namespace chatterbox::audio {

using Complex = std::complex<float>;

// Real FFT of an even size n (kissfft, computed in double, float32 in and out). A plan is
// read-only once built, so one object may serve several threads.
class RealFft {
  public:
    explicit RealFft(int n);
    ~RealFft();
    RealFft(RealFft &&) noexcept;
    RealFft &operator=(RealFft &&) noexcept;

    int size() const { return n_; }
    int bins() const { return n_ / 2 + 1; }
    // n real samples -> n/2+1 bins, unnormalised (numpy.fft.rfft).
    void forward(const float *samples, Complex *spectrum) const;
    // n/2+1 bins -> n real samples scaled by 1/n (numpy.fft.irfft); the imaginary parts of the
    // DC and Nyquist bins are ignored, as a complex-to-real transform does.
    void inverse(const Complex *spectrum, float *samples) const;

  private:
    struct Plans;
    int n_ = 0;
    std::unique_ptr<Plans> plans_;
};

// Hann window of `length` points, periodic (torch.hann_window default, scipy fftbins=True) or
// symmetric (periodic=False), with torch.hann_window's float32 arithmetic: the S3Gen mel is
// sensitive to those roundings on quiet frames (librosa's float64 window differs by ~1e-7).
std::vector<float> hann_window(int length, bool periodic = true);

// Pads with the signal mirrored about its end samples, excluding them (torch 'reflect':
// [a b c] padded by 2 -> [c b a b c b a]). Each pad must be shorter than the signal.
std::vector<float> reflect_pad(const std::vector<float> &signal, int64_t left, int64_t right);

enum class CenterPad { none, reflect, constant };

struct StftOptions {
    int n_fft = 0;
    int hop = 0;
    int win_length = 0;                    // 0 = n_fft; a shorter Hann window is centred in n_fft
    CenterPad center = CenterPad::reflect; // none = frames start at sample 0 (center=False)
};

// Complex spectrogram: frames x bins (bins = n_fft/2 + 1), frame-major.
struct Spectrogram {
    int64_t frames = 0;
    int64_t bins = 0;
    std::vector<Complex> values;

    Complex &at(int64_t frame, int64_t bin) { return values[size_t(frame * bins + bin)]; }
    const Complex &at(int64_t frame, int64_t bin) const { return values[size_t(frame * bins + bin)]; }
};

// STFT with a periodic Hann window. With centre padding the signal is padded by n_fft/2 on each
// side and there are 1 + len/hop frames; without, 1 + (len - n_fft)/hop.
Spectrogram stft(const std::vector<float> &signal, const StftOptions &options);

// |X|^2 per frame and bin (frames x bins), computed in double from the float32 spectrum.
Matrix power_spectrum(const Spectrogram &spectrogram);
// sqrt(|X|^2 + epsilon) per frame and bin (frames x bins).
Matrix magnitude_spectrum(const Spectrogram &spectrogram, double epsilon = 0.0);

// torch.istft(spec, n_fft, hop, win_length=n_fft, window=periodic Hann, center=True,
// normalized=False, onesided=True, length=None): inverse FFT of each frame, windowed overlap-add,
// division by the overlap-added squared window, n_fft/2 samples dropped at each end. Returns
// hop * (frames - 1) samples. `spectrogram.bins` must be n_fft/2 + 1.
std::vector<float> istft(const Spectrogram &spectrogram, int n_fft, int hop);

} // namespace chatterbox::audio
