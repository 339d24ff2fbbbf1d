#include "audio/features.h"

#include "audio/mel.h"
#include "audio/signal_checks.h"
#include "audio/stft.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace chatterbox::audio {
namespace {

// A filterbank with the span of non-zero weights of each row, so projecting skips the zeros.
struct Filterbank {
    Matrix weights; // filters x bins
    std::vector<std::pair<int64_t, int64_t>> spans;

    explicit Filterbank(Matrix w) : weights(std::move(w)) {
        for (int64_t r = 0; r < weights.rows; ++r) {
            int64_t first = weights.cols, last = 0;
            for (int64_t c = 0; c < weights.cols; ++c) {
                if (weights.at(r, c) == 0.0f) continue;
                first = std::min(first, c);
                last = c + 1;
            }
            spans.emplace_back(first, std::max(first, last));
        }
    }

    // spectrum (frames x bins) -> frames x filters, accumulated in double.
    Matrix apply(const Matrix &spectrum) const {
        if (spectrum.cols != weights.cols)
            fail("filterbank: spectrum has ", spectrum.cols, " bins, the filters expect ", weights.cols);
        Matrix out(spectrum.rows, weights.rows);
        for (int64_t f = 0; f < spectrum.rows; ++f) {
            const float *bins = spectrum.row(f);
            for (int64_t m = 0; m < weights.rows; ++m) {
                const float *w = weights.row(m);
                double sum = 0.0;
                for (int64_t k = spans[size_t(m)].first; k < spans[size_t(m)].second; ++k)
                    sum += double(w[k]) * double(bins[k]);
                out.at(f, m) = float(sum);
            }
        }
        return out;
    }
};

void require_length(const std::vector<float> &wav, size_t minimum, const char *who, const char *why) {
    if (wav.size() < minimum)
        fail(who, ": ", wav.size(), " samples are too few; at least ", minimum, " are needed (", why, ")");
}

} // namespace

Matrix s3gen_mel(const std::vector<float> &wav24k) {
    require_finite(wav24k, "s3gen_mel");
    constexpr int n_fft = 1920, hop = 480, pad = (n_fft - hop) / 2;
    require_length(wav24k, pad + 1, "s3gen_mel", "reflect padding by 720 samples at 24 kHz");
    // Padded by 1440 the signal always holds a whole 1920-sample frame.
    const Spectrogram spec = stft(reflect_pad(wav24k, pad, pad), {n_fft, hop, n_fft, CenterPad::none});
    static const Filterbank filters(librosa_mel_filters({24000.0, n_fft, 80, 0.0, 8000.0}));
    Matrix mel = filters.apply(magnitude_spectrum(spec, 1e-9));
    for (float &v : mel.values) v = std::log(std::max(v, 1e-5f));
    return mel.transposed();
}

Matrix s3tokenizer_mel_filters() { return librosa_mel_filters({16000.0, 400, 128, 0.0, 8000.0}); }

std::vector<float> s3tokenizer_window() { return hann_window(400); }

Matrix s3tokenizer_log_mel(const std::vector<float> &wav16k) {
    require_finite(wav16k, "s3tokenizer_log_mel");
    constexpr int n_fft = 400, hop = 160;
    require_length(wav16k, n_fft / 2 + 1, "s3tokenizer_log_mel", "centred reflect padding by 200 samples");
    Matrix power = power_spectrum(stft(wav16k, {n_fft, hop, n_fft, CenterPad::reflect}));
    power.rows -= 1; // the reference drops the last STFT frame (there are 1 + len/160 >= 2)
    power.values.resize(size_t(power.rows * power.cols));

    static const Filterbank filters(s3tokenizer_mel_filters());
    Matrix mel = filters.apply(power);
    float clip_max = -std::numeric_limits<float>::infinity();
    for (float &v : mel.values) {
        v = std::log10(std::max(v, 1e-10f));
        clip_max = std::max(clip_max, v);
    }
    for (float &v : mel.values) v = (std::max(v, clip_max - 8.0f) + 4.0f) / 4.0f;
    return mel.transposed();
}

SampleSpan non_silent_span(const std::vector<float> &wav, double top_db, int frame_length, int hop_length) {
    require_finite(wav, "trim_silence");
    if (frame_length <= 0 || hop_length <= 0)
        fail("trim_silence: frame_length and hop_length must be positive, got ", frame_length, " and ", hop_length);
    if (wav.empty()) return {};
    const int64_t n = int64_t(wav.size());
    const int64_t half = frame_length / 2;
    const int64_t padded = n + 2 * half;

    // Mean square of each centred, zero-padded frame (librosa.feature.rms squared).
    const int64_t frames = 1 + (padded - frame_length) / hop_length;
    std::vector<double> mean_square(static_cast<size_t>(frames));
    for (int64_t f = 0; f < frames; ++f) {
        const int64_t begin = std::max<int64_t>(0, f * hop_length - half);
        const int64_t end = std::min<int64_t>(n, f * hop_length - half + frame_length);
        double sum = 0.0;
        for (int64_t i = begin; i < end; ++i) sum += double(wav[size_t(i)]) * wav[size_t(i)];
        mean_square[size_t(f)] = sum / frame_length;
    }
    // amplitude_to_db(rms, ref=max, amin=1e-5): 10 log10 of the floored powers, relative to the loudest frame.
    constexpr double power_floor = 1e-10;
    const double loudest = *std::max_element(mean_square.begin(), mean_square.end());
    const double reference_db = 10.0 * std::log10(std::max(power_floor, loudest));
    int64_t first = -1, last = -1;
    for (int64_t f = 0; f < frames; ++f) {
        const double db = 10.0 * std::log10(std::max(power_floor, mean_square[size_t(f)])) - reference_db;
        if (db > -top_db) {
            if (first < 0) first = f;
            last = f;
        }
    }
    if (first < 0) return {};
    return {first * hop_length, std::min(n, (last + 1) * hop_length)};
}

std::vector<float> trim_silence(const std::vector<float> &wav, double top_db, int frame_length, int hop_length) {
    const SampleSpan span = non_silent_span(wav, top_db, frame_length, hop_length);
    return std::vector<float>(wav.begin() + span.begin, wav.begin() + span.end);
}

Matrix voice_encoder_mel(const std::vector<float> &wav16k) {
    require_finite(wav16k, "voice_encoder_mel");
    constexpr int n_fft = 400, hop = 160;
    const std::vector<float> trimmed = trim_silence(wav16k);
    if (trimmed.size() <= size_t(n_fft / 2))
        fail("voice_encoder_mel: ", trimmed.size(), " samples remain after trimming silence from ", wav16k.size(),
             "; more than ", n_fft / 2, " are needed for centred reflect padding");
    const Matrix power = power_spectrum(stft(trimmed, {n_fft, hop, n_fft, CenterPad::reflect}));
    static const Filterbank filters(librosa_mel_filters({16000.0, n_fft, 40, 0.0, 8000.0}));
    return filters.apply(power);
}

Matrix campplus_fbank(const std::vector<float> &wav16k) {
    require_finite(wav16k, "campplus_fbank");
    constexpr int window_size = 400, window_shift = 160, padded_size = 512, num_bins = 80;
    constexpr double preemphasis = 0.97;
    require_length(wav16k, window_size, "campplus_fbank", "one 25 ms Kaldi frame with snip_edges");

    static const Filterbank banks(kaldi_mel_banks(num_bins, padded_size, 16000.0, 20.0, 0.0));
    static const std::vector<float> povey = [] {
        std::vector<float> w = hann_window(window_size, false);
        for (float &v : w) v = float(std::pow(double(v), 0.85));
        return w;
    }();

    const int64_t frames = 1 + (int64_t(wav16k.size()) - window_size) / window_shift;
    const RealFft fft(padded_size);
    Spectrogram spectrum;
    spectrum.frames = frames;
    spectrum.bins = fft.bins();
    spectrum.values.resize(size_t(frames * spectrum.bins));
    std::vector<double> frame(window_size);
    std::vector<float> windowed(padded_size, 0.0f); // zero-padded from 400 to 512 samples
    for (int64_t f = 0; f < frames; ++f) {
        const float *start = wav16k.data() + f * window_shift;
        double mean = 0.0;
        for (int i = 0; i < window_size; ++i) mean += start[i];
        mean /= window_size;
        for (int i = 0; i < window_size; ++i) frame[size_t(i)] = double(start[i]) - mean;
        // Pre-emphasis from the end so each sample still sees its unmodified predecessor; sample 0 uses itself.
        for (int i = window_size - 1; i > 0; --i) frame[size_t(i)] -= preemphasis * frame[size_t(i - 1)];
        frame[0] -= preemphasis * frame[0];
        for (int i = 0; i < window_size; ++i) windowed[size_t(i)] = float(frame[size_t(i)] * povey[size_t(i)]);
        fft.forward(windowed.data(), &spectrum.at(f, 0));
    }

    Matrix fbank = banks.apply(power_spectrum(spectrum));
    const float epsilon = std::numeric_limits<float>::epsilon();
    for (float &v : fbank.values) v = std::log(std::max(v, epsilon));
    // Cepstral mean normalisation: subtract each bin's mean over time.
    for (int64_t b = 0; b < fbank.cols; ++b) {
        double sum = 0.0;
        for (int64_t f = 0; f < fbank.rows; ++f) sum += fbank.at(f, b);
        const float mean = float(sum / double(fbank.rows));
        for (int64_t f = 0; f < fbank.rows; ++f) fbank.at(f, b) -= mean;
    }
    return fbank;
}

} // namespace chatterbox::audio
