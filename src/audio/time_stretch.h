#pragma once
// Speed without a change of pitch: SoundTouch's time-stretch (WSOLA), fed as audio comes, so a
// stream is stretched chunk by chunk. A speed of 1 is a bypass: the samples come back untouched.

#include <cstddef>
#include <memory>
#include <vector>

namespace soundtouch {
class SoundTouch;
}

namespace chatterbox::audio {

class TimeStretch {
  public:
    // speed > 1 is faster (shorter), < 1 slower; SoundTouch takes 0.25 .. 4 and more. Throws
    // InvalidArgument for a speed that is not finite and positive.
    TimeStretch(int sample_rate, double speed);
    ~TimeStretch();
    TimeStretch(const TimeStretch &) = delete;
    TimeStretch &operator=(const TimeStretch &) = delete;

    // Takes mono samples; returns the stretched samples ready so far (the stretch holds back a
    // window of some tens of milliseconds).
    std::vector<float> process(const float *samples, size_t n);
    // The rest, after the last process: in all, round(input length / speed) samples.
    std::vector<float> finish();

  private:
    std::vector<float> receive();

    std::unique_ptr<soundtouch::SoundTouch> touch_; // null for speed 1
};

// The whole signal at once.
std::vector<float> time_stretch(const std::vector<float> &samples, int sample_rate, double speed);

} // namespace chatterbox::audio
