#include "audio/stft.h"

#include "core/error.h"

#include <kissfft.hh>

#include <cmath>

namespace chatterbox::audio {

// kissfft's C++ template in double precision: the float32 C library adds rounding noise of the
// same size as the reference's own, which shows on quiet frames after the log.
struct RealFft::Plans {
    kissfft<double> half;    // n/2-point complex transform that computes the n-point real one
    kissfft<double> inverse; // n-point inverse complex transform
    explicit Plans(int n) : half(size_t(n / 2), false), inverse(size_t(n), true) {}
};

RealFft::RealFft(int n) : n_(n) {
    if (n < 2 || n % 2 != 0) fail("RealFft: size must be even and at least 2, got ", n);
    plans_ = std::make_unique<Plans>(n);
}

RealFft::~RealFft() = default;
RealFft::RealFft(RealFft &&) noexcept = default;
RealFft &RealFft::operator=(RealFft &&) noexcept = default;

void RealFft::forward(const float *samples, Complex *spectrum) const {
    const int half = n_ / 2;
    std::vector<double> input(samples, samples + n_);
    std::vector<std::complex<double>> packed(static_cast<size_t>(half));
    plans_->half.transform_real(input.data(), packed.data());
    // transform_real packs the (real) DC and Nyquist bins into bin 0.
    spectrum[0] = Complex(float(packed[0].real()), 0.0f);
    spectrum[half] = Complex(float(packed[0].imag()), 0.0f);
    for (int k = 1; k < half; ++k)
        spectrum[k] = Complex(float(packed[size_t(k)].real()), float(packed[size_t(k)].imag()));
}

void RealFft::inverse(const Complex *spectrum, float *samples) const {
    const int half = n_ / 2;
    // The full Hermitian spectrum; DC and Nyquist are real in a complex-to-real transform.
    std::vector<std::complex<double>> full(static_cast<size_t>(n_)), time(static_cast<size_t>(n_));
    full[0] = spectrum[0].real();
    full[size_t(half)] = spectrum[half].real();
    for (int k = 1; k < half; ++k) {
        full[size_t(k)] = std::complex<double>(spectrum[k]);
        full[size_t(n_ - k)] = std::conj(full[size_t(k)]);
    }
    plans_->inverse.transform(full.data(), time.data());
    for (int i = 0; i < n_; ++i) samples[i] = float(time[size_t(i)].real() / n_);
}

std::vector<float> hann_window(int length, bool periodic) {
    if (length <= 0) fail("hann_window: length must be positive, got ", length);
    if (length == 1) return {1.0f};
    constexpr double pi = 3.14159265358979323846;
    const double period = periodic ? length : length - 1;
    std::vector<float> window(static_cast<size_t>(length));
    // torch: arange(N).mul_(2*pi/period).cos_().mul_(-0.5).add_(0.5), all in float32.
    const float step = float(2.0 * pi / period);
    for (int n = 0; n < length; ++n) window[size_t(n)] = std::cos(float(n) * step) * -0.5f + 0.5f;
    return window;
}

std::vector<float> reflect_pad(const std::vector<float> &signal, int64_t left, int64_t right) {
    const int64_t n = int64_t(signal.size());
    if (left < 0 || right < 0) fail("reflect_pad: pads must be non-negative, got ", left, " and ", right);
    if (left >= n || right >= n)
        fail("reflect_pad: a signal of ", n, " samples is too short for reflect padding by ", left, " and ", right,
             " (each pad must be shorter than the signal)");
    std::vector<float> out;
    out.reserve(size_t(n + left + right));
    for (int64_t i = left; i >= 1; --i) out.push_back(signal[size_t(i)]);
    out.insert(out.end(), signal.begin(), signal.end());
    for (int64_t i = 1; i <= right; ++i) out.push_back(signal[size_t(n - 1 - i)]);
    return out;
}

Spectrogram stft(const std::vector<float> &signal, const StftOptions &options) {
    const int n_fft = options.n_fft, hop = options.hop;
    const int win_length = options.win_length == 0 ? n_fft : options.win_length;
    if (n_fft < 2 || n_fft % 2 != 0) fail("stft: n_fft must be even and at least 2, got ", n_fft);
    if (hop <= 0) fail("stft: hop must be positive, got ", hop);
    if (win_length <= 0 || win_length > n_fft)
        fail("stft: win_length must be in [1, n_fft=", n_fft, "], got ", win_length);

    std::vector<float> padded;
    const std::vector<float> *frames_source = &signal;
    if (options.center == CenterPad::reflect) {
        padded = reflect_pad(signal, n_fft / 2, n_fft / 2);
        frames_source = &padded;
    } else if (options.center == CenterPad::constant) {
        padded.assign(size_t(n_fft / 2), 0.0f);
        padded.insert(padded.end(), signal.begin(), signal.end());
        padded.resize(padded.size() + size_t(n_fft / 2), 0.0f);
        frames_source = &padded;
    }
    const std::vector<float> &x = *frames_source;
    if (int64_t(x.size()) < n_fft)
        fail("stft: ", signal.size(), " samples are fewer than n_fft=", n_fft, " (without centre padding)");

    // The window of win_length points, centred in n_fft as torch and librosa do.
    std::vector<float> window(static_cast<size_t>(n_fft), 0.0f);
    const std::vector<float> hann = hann_window(win_length, true);
    std::copy(hann.begin(), hann.end(), window.begin() + (n_fft - win_length) / 2);

    const RealFft fft(n_fft);
    Spectrogram out;
    out.frames = 1 + (int64_t(x.size()) - n_fft) / hop;
    out.bins = fft.bins();
    out.values.resize(size_t(out.frames * out.bins));
    std::vector<float> frame(static_cast<size_t>(n_fft));
    for (int64_t f = 0; f < out.frames; ++f) {
        const float *start = x.data() + f * hop;
        for (int i = 0; i < n_fft; ++i) frame[size_t(i)] = start[i] * window[size_t(i)];
        fft.forward(frame.data(), &out.at(f, 0));
    }
    return out;
}

Matrix power_spectrum(const Spectrogram &spectrogram) {
    Matrix power(spectrogram.frames, spectrogram.bins);
    for (size_t i = 0; i < spectrogram.values.size(); ++i) {
        const double re = spectrogram.values[i].real(), im = spectrogram.values[i].imag();
        power.values[i] = float(re * re + im * im);
    }
    return power;
}

Matrix magnitude_spectrum(const Spectrogram &spectrogram, double epsilon) {
    Matrix magnitude(spectrogram.frames, spectrogram.bins);
    for (size_t i = 0; i < spectrogram.values.size(); ++i) {
        const double re = spectrogram.values[i].real(), im = spectrogram.values[i].imag();
        magnitude.values[i] = float(std::sqrt(re * re + im * im + epsilon));
    }
    return magnitude;
}

std::vector<float> istft(const Spectrogram &spectrogram, int n_fft, int hop) {
    if (n_fft < 2 || n_fft % 2 != 0) fail("istft: n_fft must be even and at least 2, got ", n_fft);
    if (hop <= 0 || hop > n_fft) fail("istft: hop must be in [1, n_fft=", n_fft, "], got ", hop);
    if (spectrogram.bins != n_fft / 2 + 1)
        fail("istft: expected ", n_fft / 2 + 1, " bins for n_fft=", n_fft, ", got ", spectrogram.bins);
    if (spectrogram.frames < 1) fail("istft: the spectrogram has no frames");
    if (int64_t(spectrogram.values.size()) != spectrogram.frames * spectrogram.bins)
        fail("istft: spectrogram holds ", spectrogram.values.size(), " values, expected ",
             spectrogram.frames * spectrogram.bins);

    const std::vector<float> window = hann_window(n_fft, true);
    const RealFft fft(n_fft);
    const int64_t full_length = n_fft + int64_t(hop) * (spectrogram.frames - 1);
    std::vector<double> sum(static_cast<size_t>(full_length), 0.0), envelope(static_cast<size_t>(full_length), 0.0);
    std::vector<float> frame(static_cast<size_t>(n_fft));
    for (int64_t f = 0; f < spectrogram.frames; ++f) {
        fft.inverse(&spectrogram.at(f, 0), frame.data());
        const int64_t offset = f * hop;
        for (int i = 0; i < n_fft; ++i) {
            sum[size_t(offset + i)] += double(frame[size_t(i)]) * window[size_t(i)];
            envelope[size_t(offset + i)] += double(window[size_t(i)]) * window[size_t(i)];
        }
    }
    // center=True: drop n_fft/2 samples at each end, as torch.istft does when length is not given.
    const int64_t begin = n_fft / 2, end = full_length - n_fft / 2;
    std::vector<float> out(static_cast<size_t>(end - begin));
    for (int64_t i = begin; i < end; ++i) {
        if (std::fabs(envelope[size_t(i)]) < 1e-11)
            fail("istft: the squared-window overlap-add vanishes at sample ", i - begin,
                 " (NOLA violated for n_fft=", n_fft, ", hop=", hop, ")");
        out[size_t(i - begin)] = float(sum[size_t(i)] / envelope[size_t(i)]);
    }
    return out;
}

} // namespace chatterbox::audio
