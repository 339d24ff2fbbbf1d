// The pitch-preserving time-stretch (src/audio/time_stretch.h): speed 1 gives the input back bit
// for bit; other speeds scale the duration by 1 / speed and keep a tone's frequency; a stream fed
// in chunks gives the same samples as the whole signal at once.

#include "audio/time_stretch.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace chatterbox;

namespace {

constexpr int kRate = 24000;

std::vector<float> tone(double hz, size_t n) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = 0.5f * float(std::sin(2 * M_PI * hz * double(i) / kRate));
    return x;
}

// The frequency (1 Hz steps, 50 .. 2000 Hz) of most energy over x[begin, end), by direct DFT.
double dominant_hz(const std::vector<float> &x, size_t begin, size_t end) {
    double best = 0, best_power = -1;
    for (double hz = 50; hz <= 2000; hz += 1) {
        double re = 0, im = 0;
        for (size_t i = begin; i < end; ++i) {
            const double phase = 2 * M_PI * hz * double(i) / kRate;
            re += x[i] * std::cos(phase);
            im += x[i] * std::sin(phase);
        }
        if (re * re + im * im > best_power) best_power = re * re + im * im, best = hz;
    }
    return best;
}

TEST(TimeStretch, SpeedOneIsABypass) {
    const std::vector<float> x = test::random_values(10007, 5);
    EXPECT_EQ(audio::time_stretch(x, kRate, 1.0), x);
    audio::TimeStretch stream(kRate, 1.0);
    EXPECT_EQ(stream.process(x.data(), 100), std::vector<float>(x.begin(), x.begin() + 100));
    EXPECT_TRUE(stream.finish().empty());
}

TEST(TimeStretch, DurationScalesByOneOverSpeedAndThePitchStays) {
    const std::vector<float> x = tone(220, 2 * kRate);
    for (double speed : {0.25, 0.5, 0.8, 1.5, 2.0, 4.0}) {
        SCOPED_TRACE(speed);
        const std::vector<float> y = audio::time_stretch(x, kRate, speed);
        // SoundTouch's flush trims its silent padding to the length the speed asks for.
        EXPECT_EQ(double(y.size()), std::round(double(x.size()) / speed));
        // A tenth of a second from the middle: the same note, not one transposed by the speed.
        const size_t middle = y.size() / 2;
        EXPECT_NEAR(dominant_hz(y, middle - kRate / 20, middle + kRate / 20), 220.0, 4.0);
    }
}

TEST(TimeStretch, ChunksGiveTheWholeSignalsSamples) {
    const std::vector<float> x = test::random_values(3 * kRate, 9, -0.5f, 0.5f);
    for (double speed : {0.7, 1.3}) {
        SCOPED_TRACE(speed);
        audio::TimeStretch stream(kRate, speed);
        std::vector<float> streamed;
        bool early = false; // samples came out before the end
        for (size_t at = 0, n = 1; at < x.size(); at += n, n = n * 3 % 4801 + 1) {
            n = std::min(n, x.size() - at);
            const std::vector<float> out = stream.process(x.data() + at, n);
            early = early || !out.empty();
            streamed.insert(streamed.end(), out.begin(), out.end());
        }
        const std::vector<float> rest = stream.finish();
        streamed.insert(streamed.end(), rest.begin(), rest.end());
        EXPECT_TRUE(early);
        EXPECT_EQ(streamed, audio::time_stretch(x, kRate, speed));
    }
}

TEST(TimeStretch, RefusesASpeedThatIsNotPositive) {
    test::expect_error([] { audio::TimeStretch(kRate, 0.0); }, "speed is 0, expected > 0");
    test::expect_error([] { audio::TimeStretch(kRate, std::nan("")); }, "speed is nan");
    test::expect_error([] { audio::TimeStretch(0, 2.0); }, "sample rate 0");
}

} // namespace
