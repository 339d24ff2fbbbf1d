#include "audio/loudness.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace chatterbox::audio {
namespace {

constexpr double kBlockSeconds = 0.4;
constexpr double kBlockStep = 1.0 - 0.75; // 75 % overlap
constexpr double kAbsoluteGate = -70.0;
constexpr double kRelativeGate = -10.0;

// Normalised biquad run as scipy.signal.lfilter does (transposed direct form II), in double.
struct Biquad {
    double b0, b1, b2, a1, a2;

    void apply(std::vector<double> &x) const {
        double s1 = 0, s2 = 0;
        for (double &v : x) {
            const double y = b0 * v + s1;
            s1 = b1 * v - a1 * y + s2;
            s2 = b2 * v - a2 * y;
            v = y;
        }
    }
};

Biquad normalised(double b0, double b1, double b2, double a0, double a1, double a2) {
    return {b0 / a0, b1 / a0, b2 / a0, a1 / a0, a2 / a0};
}

// RBJ cookbook high shelf of gain_db at fc with quality q.
Biquad high_shelf(double gain_db, double q, double fc, double rate) {
    const double a = std::pow(10.0, gain_db / 40.0), w0 = 2.0 * M_PI * (fc / rate);
    const double alpha = std::sin(w0) / (2.0 * q), c = std::cos(w0), root = 2 * std::sqrt(a) * alpha;
    return normalised(a * ((a + 1) + (a - 1) * c + root), -2 * a * ((a - 1) + (a + 1) * c),
                      a * ((a + 1) + (a - 1) * c - root), (a + 1) - (a - 1) * c + root, 2 * ((a - 1) - (a + 1) * c),
                      (a + 1) - (a - 1) * c - root);
}

Biquad high_pass(double q, double fc, double rate) {
    const double w0 = 2.0 * M_PI * (fc / rate), alpha = std::sin(w0) / (2.0 * q), c = std::cos(w0);
    return normalised((1 + c) / 2, -(1 + c), (1 + c) / 2, 1 + alpha, -2 * c, 1 - alpha);
}

double block_loudness(double mean_square) { return -0.691 + 10.0 * std::log10(mean_square); }

} // namespace

double integrated_loudness(const std::vector<float> &samples, int sample_rate) {
    if (sample_rate <= 0) throw InvalidArgument(concat("loudness: sample rate ", sample_rate, " is not positive"));
    const double rate = sample_rate;
    if (double(samples.size()) < kBlockSeconds * rate) {
        throw InvalidArgument(concat("loudness: ", samples.size(), " samples are shorter than one ",
                                     kBlockSeconds * 1000, " ms block at ", sample_rate, " Hz"));
    }
    std::vector<double> weighted(samples.begin(), samples.end());
    high_shelf(4.0, 1.0 / std::sqrt(2.0), 1500.0, rate).apply(weighted);
    high_pass(0.5, 38.0, rate).apply(weighted);

    // pyloudnorm's blocks: round((T - Tg) / (Tg * step)) + 1 of them (numpy rounds halves to even),
    // block j over samples [int(Tg * j * step * rate), int(Tg * (j * step + 1) * rate)), cut at the end.
    const double seconds = double(samples.size()) / rate;
    const long blocks = long(std::nearbyint((seconds - kBlockSeconds) / (kBlockSeconds * kBlockStep))) + 1;
    std::vector<double> mean_squares(static_cast<size_t>(blocks));
    for (long j = 0; j < blocks; ++j) {
        const size_t lower = size_t(kBlockSeconds * (double(j) * kBlockStep) * rate);
        const size_t upper = std::min(weighted.size(), size_t(kBlockSeconds * (double(j) * kBlockStep + 1) * rate));
        double sum = 0;
        for (size_t i = lower; i < upper; ++i) sum += weighted[i] * weighted[i];
        mean_squares[size_t(j)] = (1.0 / (kBlockSeconds * rate)) * sum;
    }

    // Mean square of the blocks whose loudness passes `passes`; 0 when none does.
    const auto gated_mean = [&](auto passes) {
        double sum = 0;
        size_t count = 0;
        for (double z : mean_squares) {
            if (!passes(block_loudness(z))) continue;
            sum += z;
            ++count;
        }
        return count == 0 ? 0.0 : sum / double(count);
    };
    const double absolute = gated_mean([](double l) { return l >= kAbsoluteGate; });
    if (absolute == 0.0) return -std::numeric_limits<double>::infinity();
    const double relative = block_loudness(absolute) + kRelativeGate;
    const double gated = gated_mean([&](double l) { return l > relative && l > kAbsoluteGate; });
    return gated == 0.0 ? -std::numeric_limits<double>::infinity() : block_loudness(gated);
}

std::vector<float> normalize_loudness(const std::vector<float> &samples, int sample_rate, double target_lufs) {
    if (sample_rate <= 0 || double(samples.size()) < kBlockSeconds * sample_rate) return samples;
    const double gain = std::pow(10.0, (target_lufs - integrated_loudness(samples, sample_rate)) / 20.0);
    if (!std::isfinite(gain) || gain <= 0.0) return samples;
    std::vector<float> out(samples.size());
    const float gain32 = float(gain);
    for (size_t i = 0; i < samples.size(); ++i) out[i] = samples[i] * gain32;
    return out;
}

} // namespace chatterbox::audio
