// Mel scales and filterbanks: known scale values, triangle geometry, Slaney area normalisation and
// the Kaldi bank layout fbank relies on.

#include "audio/mel.h"
#include "core/error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace chatterbox;
using namespace chatterbox::audio;

TEST(MelScale, KnownValuesAndRoundTrips) {
    EXPECT_DOUBLE_EQ(hz_to_mel(0.0, MelScale::slaney), 0.0);
    EXPECT_NEAR(hz_to_mel(500.0, MelScale::slaney), 7.5, 1e-12);
    EXPECT_NEAR(hz_to_mel(1000.0, MelScale::slaney), 15.0, 1e-12);
    EXPECT_NEAR(hz_to_mel(8000.0, MelScale::slaney), 15.0 + std::log(8.0) * 27.0 / std::log(6.4), 1e-9);
    EXPECT_NEAR(hz_to_mel(700.0, MelScale::htk), 2595.0 * std::log10(2.0), 1e-9);
    EXPECT_NEAR(kaldi_mel_scale(700.0), 1127.0 * std::log(2.0), 1e-9);
    for (double hz : {0.0, 20.0, 440.0, 999.0, 1000.0, 1001.0, 4000.0, 11025.0}) {
        EXPECT_NEAR(mel_to_hz(hz_to_mel(hz, MelScale::slaney), MelScale::slaney), hz, 1e-9 * std::max(1.0, hz));
        EXPECT_NEAR(mel_to_hz(hz_to_mel(hz, MelScale::htk), MelScale::htk), hz, 1e-9 * std::max(1.0, hz));
    }
}

TEST(LibrosaMel, TrianglesAreOrderedAndHaveUnitArea) {
    // Fine frequency resolution, so the area of each sampled triangle approaches its continuous area 1.
    const double sr = 16000;
    const int n_fft = 16384;
    const Matrix filters = librosa_mel_filters({sr, n_fft, 40, 0.0, 8000.0});
    ASSERT_EQ(filters.rows, 40);
    ASSERT_EQ(filters.cols, n_fft / 2 + 1);
    const double bin_hz = sr / n_fft;
    int64_t previous_peak = -1;
    for (int64_t m = 0; m < filters.rows; ++m) {
        double area = 0;
        int64_t peak = 0;
        for (int64_t k = 0; k < filters.cols; ++k) {
            ASSERT_GE(filters.at(m, k), 0.0f);
            area += filters.at(m, k) * bin_hz;
            if (filters.at(m, k) > filters.at(m, peak)) peak = k;
        }
        EXPECT_NEAR(area, 1.0, 0.01) << "filter " << m;
        EXPECT_GT(peak, previous_peak);
        previous_peak = peak;
        // The peak sits at the centre mel point, m + 1 of n_mels + 2 evenly spaced points.
        const double centre_mel = (m + 1) * hz_to_mel(8000.0, MelScale::slaney) / 41.0;
        EXPECT_NEAR(double(peak) * bin_hz, mel_to_hz(centre_mel, MelScale::slaney), bin_hz);
    }
}

TEST(LibrosaMel, HtkWithoutNormalisationPeaksAtOne) {
    const Matrix filters = librosa_mel_filters({22050, 8192, 20, 100.0, 6000.0, MelScale::htk, false});
    const double bin_hz = 22050.0 / 8192;
    for (int64_t m = 0; m < filters.rows; ++m) {
        float peak = 0;
        for (int64_t k = 0; k < filters.cols; ++k) {
            peak = std::max(peak, filters.at(m, k));
            const double hz = k * bin_hz;
            if (hz < 100.0 || hz > 6000.0) {
                EXPECT_EQ(filters.at(m, k), 0.0f) << m << " " << k;
            }
        }
        EXPECT_LE(peak, 1.0f);
        EXPECT_GT(peak, 0.95f);
    }
}

TEST(LibrosaMel, RejectsBadOptions) {
    EXPECT_THROW(librosa_mel_filters({0, 400, 40}), Error);
    EXPECT_THROW(librosa_mel_filters({16000, 400, 0}), Error);
    EXPECT_THROW(librosa_mel_filters({16000, 400, 40, 0.0, 9000.0}), Error);
    EXPECT_THROW(librosa_mel_filters({16000, 400, 40, 5000.0, 4000.0}), Error);
}

TEST(KaldiMel, BanksCoverLowToNyquistWithAZeroLastColumn) {
    const Matrix banks = kaldi_mel_banks(80, 512, 16000.0, 20.0, 0.0);
    ASSERT_EQ(banks.rows, 80);
    ASSERT_EQ(banks.cols, 257);
    const double bin_hz = 16000.0 / 512;
    int64_t previous_first = -1;
    for (int64_t b = 0; b < banks.rows; ++b) {
        EXPECT_EQ(banks.at(b, 256), 0.0f);
        EXPECT_EQ(banks.at(b, 0), 0.0f); // 0 Hz lies below the 20 Hz lower edge
        float peak = 0;
        int64_t first = -1;
        for (int64_t k = 0; k < banks.cols; ++k) {
            const float w = banks.at(b, k);
            ASSERT_GE(w, 0.0f);
            peak = std::max(peak, w);
            if (w > 0 && first < 0) first = k;
        }
        EXPECT_LE(peak, 1.0f);
        EXPECT_GE(first, previous_first); // narrow low banks may share a first bin
        previous_first = first;
        // The left edge of bank b is mel point b of 82 evenly spaced between 20 Hz and 8 kHz.
        const double low = kaldi_mel_scale(20.0), delta = (kaldi_mel_scale(8000.0) - low) / 81.0;
        const double left_hz = 700.0 * (std::exp((low + b * delta) / 1127.0) - 1.0);
        EXPECT_GT(first * bin_hz, left_hz);
        EXPECT_LE((first - 1) * bin_hz, left_hz);
    }
}

TEST(KaldiMel, RejectsBadOptions) {
    EXPECT_THROW(kaldi_mel_banks(3, 512, 16000, 20, 0), Error);
    EXPECT_THROW(kaldi_mel_banks(80, 511, 16000, 20, 0), Error);
    EXPECT_THROW(kaldi_mel_banks(80, 512, 16000, 9000, 0), Error);
    EXPECT_THROW(kaldi_mel_banks(80, 512, 16000, 20, 9000), Error);
}
