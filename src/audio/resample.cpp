#include "audio/resample.h"

#include "audio/signal_checks.h"
#include "core/error.h"

#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

namespace chatterbox::audio {
namespace {

void check_rates(const char *who, int sr_in, int sr_out) {
    if (sr_in <= 0 || sr_out <= 0) fail(who, ": sample rates must be positive, got ", sr_in, " -> ", sr_out);
}

struct SoxrDeleter {
    void operator()(soxr_t resampler) const { soxr_delete(resampler); }
};

} // namespace

std::vector<float> resample_soxr_hq(const std::vector<float> &x, int sr_in, int sr_out) {
    check_rates("resample_soxr_hq", sr_in, sr_out);
    require_finite(x, "resample_soxr_hq");
    if (sr_in == sr_out) return x;

    const double in_rate = sr_in, out_rate = sr_out;
    soxr_error_t error = nullptr;
    const soxr_io_spec_t io_spec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    const soxr_quality_spec_t quality_spec = soxr_quality_spec(SOXR_HQ, 0); // flags 0 = linear phase
    std::unique_ptr<soxr, SoxrDeleter> resampler(
        soxr_create(in_rate, out_rate, 1, &error, &io_spec, &quality_spec, nullptr));
    if (error || !resampler) fail("resample_soxr_hq: libsoxr refused ", sr_in, " -> ", sr_out, ": ", error);

    // python-soxr's output capacity and input block length, so the libsoxr calls are the reference's.
    const size_t capacity = size_t(double(x.size()) * out_rate / in_rate) + 1;
    const size_t block = size_t(std::max(1000.0, 48000.0 * in_rate / out_rate));
    std::vector<float> y(capacity, 0.0f);
    size_t produced = 0;
    auto process = [&](const float *input, size_t count) {
        size_t done = 0;
        error = soxr_process(resampler.get(), input, count, nullptr, y.data() + produced, capacity - produced, &done);
        if (error) fail("resample_soxr_hq: libsoxr failed after ", produced, " output samples: ", error);
        produced += done;
    };
    for (size_t start = 0; start < x.size(); start += block)
        process(x.data() + start, std::min(block, x.size() - start));
    process(nullptr, 0); // flush the filter tail

    // librosa.util.fix_length to ceil(n * ratio).
    const size_t target = size_t(std::ceil(double(x.size()) * (out_rate / in_rate)));
    y.resize(produced);
    y.resize(target, 0.0f);
    return y;
}

std::vector<float> resample_torchaudio(const std::vector<float> &x, int sr_in, int sr_out) {
    check_rates("resample_torchaudio", sr_in, sr_out);
    require_finite(x, "resample_torchaudio");
    if (sr_in == sr_out) return x;

    constexpr int lowpass_filter_width = 6;
    constexpr double rolloff = 0.99;
    constexpr double pi = 3.14159265358979323846;
    const int gcd = std::gcd(sr_in, sr_out);
    const int64_t orig = sr_in / gcd, updated = sr_out / gcd;

    // Kernel (updated phases x taps), evaluated in double and stored as float32 like torchaudio.
    const double base_freq = double(std::min(orig, updated)) * rolloff;
    const int64_t width = int64_t(std::ceil(lowpass_filter_width * double(orig) / base_freq));
    const int64_t taps = 2 * width + orig;
    const double scale = base_freq / double(orig);
    std::vector<float> kernel(static_cast<size_t>(updated * taps));
    for (int64_t phase = 0; phase < updated; ++phase) {
        for (int64_t k = 0; k < taps; ++k) {
            const double idx = double(k - width) / double(orig);
            // torchaudio divides the integer phase index in float32 before adding the float64 taps.
            const double phase_offset = double(float(-double(phase) / double(updated)));
            double t = (phase_offset + idx) * base_freq;
            t = std::clamp(t, -double(lowpass_filter_width), double(lowpass_filter_width));
            const double window = std::pow(std::cos(t * pi / lowpass_filter_width / 2), 2);
            t *= pi;
            const double sinc = t == 0 ? 1.0 : std::sin(t) / t;
            kernel[size_t(phase * taps + k)] = float(sinc * (window * scale));
        }
    }

    // conv1d over the zero-padded input with stride `orig`; output phase p of step n is sample n*updated + p.
    const int64_t length = int64_t(x.size());
    const int64_t steps = length / orig + 1; // (length + 2*width + orig - taps) / orig + 1
    const int64_t target = int64_t(std::ceil(double(updated) * double(length) / double(orig)));
    std::vector<float> y(size_t(std::min(steps * updated, target)));
    for (int64_t out = 0; out < int64_t(y.size()); ++out) {
        const int64_t step = out / updated, phase = out % updated;
        const float *weights = kernel.data() + phase * taps;
        const int64_t first = step * orig - width; // input index under tap 0
        const int64_t k_begin = std::max<int64_t>(0, -first);
        const int64_t k_end = std::min<int64_t>(taps, length - first);
        double sum = 0.0;
        for (int64_t k = k_begin; k < k_end; ++k) sum += double(weights[k]) * double(x[size_t(first + k)]);
        y[size_t(out)] = float(sum);
    }
    return y;
}

} // namespace chatterbox::audio
