#include "models/chatterbox/flow_noise.h"

#include "core/error.h"
#include "models/chatterbox/s3gen/flow_cfm.h"

#include <cmath>
#include <random>

namespace chatterbox {

namespace {

class DrawnFlowNoise : public FlowNoise {
  public:
    DrawnFlowNoise(uint64_t seed, size_t mel_bins) : rng_(seed), mel_bins_(mel_bins) {}
    std::vector<float> next(size_t frames) override { return s3gen::standard_normal(frames * mel_bins_, rng_); }

  private:
    std::mt19937_64 rng_;
    size_t mel_bins_;
};

class FixedFlowNoise : public FlowNoise {
  public:
    explicit FixedFlowNoise(const FlowNoiseBuffer &buffer) : buffer_(buffer) {}
    std::vector<float> next(size_t frames) override {
        if (frames > buffer_.frames - used_)
            throw InvalidArgument(concat("the flow noise holds ", buffer_.frames,
                                         " frames; this text piece needs more (at least ", used_ + frames,
                                         ": its voice prompt's frames and 2 per speech token)"));
        std::vector<float> out(frames * buffer_.mel_bins);
        for (size_t f = 0; f < frames; ++f)
            for (size_t c = 0; c < buffer_.mel_bins; ++c)
                out[f * buffer_.mel_bins + c] = buffer_.values[c * buffer_.frames + used_ + f];
        used_ += frames;
        return out;
    }

  private:
    FlowNoiseBuffer buffer_;
    size_t used_ = 0;
};

} // namespace

std::unique_ptr<FlowNoise> drawn_flow_noise(uint64_t seed, size_t mel_bins) {
    return std::make_unique<DrawnFlowNoise>(seed, mel_bins);
}

std::unique_ptr<FlowNoise> fixed_flow_noise(const FlowNoiseBuffer &buffer, size_t mel_bins) {
    if (!buffer.values || buffer.mel_bins != mel_bins)
        throw InvalidArgument(concat("the flow noise must be (", mel_bins, ", frames), got (", buffer.mel_bins, ", ",
                                     buffer.frames, ")"));
    for (size_t i = 0; i < buffer.mel_bins * buffer.frames; ++i)
        if (!std::isfinite(buffer.values[i]))
            throw InvalidArgument(concat("the flow noise has ", buffer.values[i], " at (", i / buffer.frames, ", ",
                                         i % buffer.frames, ")"));
    return std::make_unique<FixedFlowNoise>(buffer);
}

} // namespace chatterbox
