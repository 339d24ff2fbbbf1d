#include "audio/time_stretch.h"

#include "core/error.h"

#include <SoundTouch.h>

#include <cmath>

namespace chatterbox::audio {

TimeStretch::TimeStretch(int sample_rate, double speed) {
    if (!(std::isfinite(speed) && speed > 0)) throw InvalidArgument(concat("speed is ", speed, ", expected > 0"));
    if (sample_rate <= 0) throw InvalidArgument(concat("time_stretch: sample rate ", sample_rate, " Hz"));
    if (speed == 1.0) return;
    touch_ = std::make_unique<soundtouch::SoundTouch>();
    touch_->setSampleRate(unsigned(sample_rate));
    touch_->setChannels(1);
    touch_->setTempo(speed);
    // soundstretch's -speech settings: shorter sequences and windows than its music defaults keep
    // the syllables of speech from echoing.
    touch_->setSetting(SETTING_SEQUENCE_MS, 40);
    touch_->setSetting(SETTING_SEEKWINDOW_MS, 15);
    touch_->setSetting(SETTING_OVERLAP_MS, 8);
}

TimeStretch::~TimeStretch() = default;

std::vector<float> TimeStretch::process(const float *samples, size_t n) {
    if (!touch_) return std::vector<float>(samples, samples + n);
    touch_->putSamples(samples, unsigned(n));
    return receive();
}

std::vector<float> TimeStretch::finish() {
    if (!touch_) return {};
    touch_->flush(); // pads with silence and trims the output to the expected length
    return receive();
}

std::vector<float> TimeStretch::receive() {
    std::vector<float> out(touch_->numSamples());
    out.resize(touch_->receiveSamples(out.data(), unsigned(out.size())));
    return out;
}

std::vector<float> time_stretch(const std::vector<float> &samples, int sample_rate, double speed) {
    TimeStretch stretch(sample_rate, speed);
    std::vector<float> out = stretch.process(samples.data(), samples.size());
    const std::vector<float> rest = stretch.finish();
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

} // namespace chatterbox::audio
