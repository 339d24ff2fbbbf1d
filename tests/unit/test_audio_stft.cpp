// FFT, STFT and inverse STFT against naive double-precision DFT references on random signals.

#include "audio/stft.h"
#include "core/error.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>

using namespace chatterbox;
using namespace chatterbox::audio;
using namespace chatterbox::test;

namespace {

constexpr double pi = 3.14159265358979323846;
using ComplexD = std::complex<double>;

std::vector<ComplexD> naive_rfft(const std::vector<double> &x) {
    const size_t n = x.size();
    std::vector<ComplexD> out(n / 2 + 1);
    for (size_t k = 0; k <= n / 2; ++k)
        for (size_t t = 0; t < n; ++t) out[k] += x[t] * std::polar(1.0, -2.0 * pi * double(k * t % n) / double(n));
    return out;
}

// Inverse of a one-sided spectrum of even size n (imaginary parts of DC and Nyquist ignored), scaled by 1/n.
std::vector<double> naive_irfft(const std::vector<ComplexD> &bins, size_t n) {
    std::vector<double> out(n);
    for (size_t t = 0; t < n; ++t) {
        double sum = bins[0].real() + bins[n / 2].real() * ((t % 2) ? -1.0 : 1.0);
        for (size_t k = 1; k < n / 2; ++k)
            sum += 2.0 * (bins[k] * std::polar(1.0, 2.0 * pi * double(k * t % n) / double(n))).real();
        out[t] = sum / double(n);
    }
    return out;
}

double periodic_hann(size_t i, size_t n) { return 0.5 - 0.5 * std::cos(2.0 * pi * double(i) / double(n)); }

// torch.stft(center=..., window=periodic Hann of n_fft) computed directly.
std::vector<std::vector<ComplexD>> naive_stft(const std::vector<float> &x, int n_fft, int hop, CenterPad center) {
    std::vector<double> padded;
    const int64_t half = center == CenterPad::none ? 0 : n_fft / 2;
    const int64_t n = int64_t(x.size());
    for (int64_t i = -half; i < n + half; ++i) {
        if (i >= 0 && i < n)
            padded.push_back(x[size_t(i)]);
        else if (center == CenterPad::constant)
            padded.push_back(0.0);
        else
            padded.push_back(x[size_t(i < 0 ? -i : 2 * (n - 1) - i)]);
    }
    std::vector<std::vector<ComplexD>> frames;
    for (size_t start = 0; start + size_t(n_fft) <= padded.size(); start += size_t(hop)) {
        std::vector<double> frame(static_cast<size_t>(n_fft));
        for (size_t i = 0; i < size_t(n_fft); ++i) frame[i] = padded[start + i] * periodic_hann(i, size_t(n_fft));
        frames.push_back(naive_rfft(frame));
    }
    return frames;
}

} // namespace

TEST(Stft, RealFftMatchesNaiveDft) {
    for (int n : {2, 6, 16, 400, 512, 1920}) {
        SCOPED_TRACE(n);
        const std::vector<float> x = random_values(size_t(n), uint64_t(n));
        const RealFft fft(n);
        std::vector<Complex> bins(size_t(fft.bins()));
        fft.forward(x.data(), bins.data());
        const std::vector<ComplexD> expected = naive_rfft(std::vector<double>(x.begin(), x.end()));
        double worst = 0, scale = 0;
        for (size_t k = 0; k < bins.size(); ++k) {
            worst = std::max(worst, std::abs(ComplexD(bins[k]) - expected[k]));
            scale = std::max(scale, std::abs(expected[k]));
        }
        EXPECT_LT(worst, 1e-6 * scale);

        std::vector<float> back(static_cast<size_t>(n));
        fft.inverse(bins.data(), back.data());
        EXPECT_LT(compare(back, x).max_abs, 1e-5);
    }
    EXPECT_THROW(RealFft(15), Error);
    EXPECT_THROW(RealFft(0), Error);
}

TEST(Stft, InverseFftIgnoresImaginaryPartsOfDcAndNyquist) {
    const int n = 16;
    std::vector<Complex> bins(n / 2 + 1);
    const std::vector<float> re = random_values(bins.size(), 7), im = random_values(bins.size(), 8);
    for (size_t k = 0; k < bins.size(); ++k) bins[k] = {re[k], im[k]};
    std::vector<ComplexD> bins_d(bins.begin(), bins.end());
    const std::vector<double> expected = naive_irfft(bins_d, n);
    std::vector<float> out(n);
    RealFft(n).inverse(bins.data(), out.data());
    for (int i = 0; i < n; ++i) EXPECT_NEAR(out[size_t(i)], expected[size_t(i)], 1e-6);
}

TEST(Stft, HannWindowsArePeriodicOrSymmetric) {
    const std::vector<float> periodic = hann_window(4, true), symmetric = hann_window(5, false);
    const std::vector<float> expected_periodic = {0.0f, 0.5f, 1.0f, 0.5f};
    const std::vector<float> expected_symmetric = {0.0f, 0.5f, 1.0f, 0.5f, 0.0f};
    EXPECT_LT(compare(periodic, expected_periodic).max_abs, 1e-7);
    EXPECT_LT(compare(symmetric, expected_symmetric).max_abs, 1e-7);
    EXPECT_EQ(hann_window(1), std::vector<float>{1.0f});
    EXPECT_THROW(hann_window(0), Error);
}

TEST(Stft, ReflectPadMirrorsWithoutRepeatingTheEdge) {
    const std::vector<float> padded = reflect_pad({1, 2, 3, 4}, 2, 3);
    EXPECT_EQ(padded, (std::vector<float>{3, 2, 1, 2, 3, 4, 3, 2, 1}));
    EXPECT_THROW(reflect_pad({1, 2, 3}, 3, 0), Error);
    EXPECT_THROW(reflect_pad({1, 2, 3}, 0, 3), Error);
    EXPECT_THROW(reflect_pad({}, 0, 0), Error);
}

TEST(Stft, MatchesNaiveStftForEveryPadding) {
    const std::vector<float> x = random_values(1234, 42);
    for (CenterPad pad : {CenterPad::reflect, CenterPad::constant, CenterPad::none}) {
        for (const auto &[n_fft, hop] : std::vector<std::pair<int, int>>{{16, 4}, {400, 160}, {512, 100}}) {
            SCOPED_TRACE("pad " + std::to_string(int(pad)) + " n_fft " + std::to_string(n_fft));
            const Spectrogram spec = stft(x, {n_fft, hop, 0, pad});
            const auto expected = naive_stft(x, n_fft, hop, pad);
            ASSERT_EQ(spec.frames, int64_t(expected.size()));
            ASSERT_EQ(spec.bins, n_fft / 2 + 1);
            if (pad != CenterPad::none) {
                EXPECT_EQ(spec.frames, 1 + int64_t(x.size()) / hop);
            }
            double worst = 0;
            for (int64_t f = 0; f < spec.frames; ++f)
                for (int64_t k = 0; k < spec.bins; ++k)
                    worst = std::max(worst, std::abs(ComplexD(spec.at(f, k)) - expected[size_t(f)][size_t(k)]));
            EXPECT_LT(worst, 2e-5 * std::sqrt(double(n_fft)));

            const Matrix power = power_spectrum(spec), magnitude = magnitude_spectrum(spec, 1e-9);
            for (int64_t f = 0; f < spec.frames; f += 7)
                for (int64_t k = 0; k < spec.bins; k += 3) {
                    const double p = std::norm(ComplexD(spec.at(f, k)));
                    EXPECT_NEAR(power.at(f, k), p, 1e-6 * std::max(1.0, p));
                    EXPECT_NEAR(magnitude.at(f, k), std::sqrt(p + 1e-9), 1e-6 * std::max(1.0, std::sqrt(p)));
                }
        }
    }
}

TEST(Stft, ShortWindowIsCentredInTheFrame) {
    const std::vector<float> x = random_values(300, 3);
    const Spectrogram spec = stft(x, {64, 16, 32, CenterPad::none});
    std::vector<double> frame(64, 0.0);
    for (size_t i = 0; i < 32; ++i) frame[16 + i] = x[16 + i] * periodic_hann(i, 32);
    const std::vector<ComplexD> expected = naive_rfft(frame);
    for (int64_t k = 0; k < spec.bins; ++k) EXPECT_LT(std::abs(ComplexD(spec.at(0, k)) - expected[size_t(k)]), 1e-5);
}

TEST(Stft, RejectsBadShapes) {
    const std::vector<float> x = random_values(100, 1);
    EXPECT_THROW(stft(x, {15, 4, 0, CenterPad::reflect}), Error);
    EXPECT_THROW(stft(x, {16, 0, 0, CenterPad::reflect}), Error);
    EXPECT_THROW(stft(x, {16, 4, 17, CenterPad::reflect}), Error);
    EXPECT_THROW(stft(x, {128, 4, 0, CenterPad::none}), Error);    // shorter than one frame
    EXPECT_THROW(stft(x, {256, 4, 0, CenterPad::reflect}), Error); // too short to reflect by 128
    EXPECT_EQ(stft({}, {16, 4, 0, CenterPad::constant}).frames, 1);
}

TEST(Istft, MatchesNaiveTorchIstft) {
    const int n_fft = 16, hop = 4;
    const int64_t frames = 37, bins = n_fft / 2 + 1;
    Spectrogram spec;
    spec.frames = frames;
    spec.bins = bins;
    const std::vector<float> re = random_values(size_t(frames * bins), 11),
                             im = random_values(size_t(frames * bins), 12);
    for (size_t i = 0; i < re.size(); ++i) spec.values.emplace_back(re[i], im[i]);

    // Naive torch.istft: irfft per frame, window, overlap-add, divide by the summed squared window, trim n_fft/2.
    const size_t full = size_t(n_fft + hop * (frames - 1));
    std::vector<double> sum(full, 0.0), envelope(full, 0.0);
    for (int64_t f = 0; f < frames; ++f) {
        std::vector<ComplexD> frame_bins(spec.values.begin() + f * bins, spec.values.begin() + (f + 1) * bins);
        const std::vector<double> frame = naive_irfft(frame_bins, n_fft);
        for (size_t i = 0; i < size_t(n_fft); ++i) {
            sum[size_t(f * hop) + i] += frame[i] * periodic_hann(i, n_fft);
            envelope[size_t(f * hop) + i] += periodic_hann(i, n_fft) * periodic_hann(i, n_fft);
        }
    }
    std::vector<float> expected;
    for (size_t i = n_fft / 2; i < full - n_fft / 2; ++i) expected.push_back(float(sum[i] / envelope[i]));

    const std::vector<float> out = istft(spec, n_fft, hop);
    ASSERT_EQ(out.size(), size_t(hop * (frames - 1)));
    EXPECT_LT(compare(out, expected).max_abs, 1e-5 * std::max(1.0, max_magnitude(expected)));
}

TEST(Istft, InvertsTheCentredStft) {
    const std::vector<float> x = random_values(4000, 5);
    const std::vector<float> back = istft(stft(x, {16, 4, 0, CenterPad::reflect}), 16, 4);
    ASSERT_EQ(back.size(), x.size());
    EXPECT_LT(compare(back, x).max_abs, 1e-5);
}

TEST(Istft, RejectsInconsistentSpectrograms) {
    Spectrogram spec;
    spec.frames = 4;
    spec.bins = 8;
    spec.values.resize(32);
    EXPECT_THROW(istft(spec, 16, 4), Error); // 8 bins, 16-point FFT needs 9
    spec.bins = 9;
    EXPECT_THROW(istft(spec, 16, 4), Error); // 32 values for 4 x 9
    spec.values.resize(36);
    EXPECT_THROW(istft(spec, 16, 17), Error);
    EXPECT_NO_THROW(istft(spec, 16, 4));
    spec.frames = 0;
    spec.values.clear();
    EXPECT_THROW(istft(spec, 16, 4), Error);
}
