#pragma once
// The flow's initial noise along one text piece's timeline: every frame of the voice prompt, then
// the speech's frames, handed out in order, frame-major (frames, mel_bins), so that overlapping
// streaming windows see the same noise. The engine draws it from the piece's seed. A fixed buffer
// instead gives what the official flow starts from when the user has it: its former rand_noise
// buffer, sliced [:, :, :T] at every call, or the z of one official call recorded after
// torch.manual_seed (spec s3gen.md §CFM noise; the official call draws it after T3's tokens, over
// the whole utterance's length, which a stream cannot know before its first audio).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace chatterbox {

// (mel_bins, frames) channel-major, as torch's z[0]; the caller keeps it alive during the request.
struct FlowNoiseBuffer {
    const float *values = nullptr;
    size_t mel_bins = 0, frames = 0;
};

class FlowNoise {
  public:
    virtual ~FlowNoise() = default;
    // The timeline's next `frames` frames, (frames, mel_bins).
    virtual std::vector<float> next(size_t frames) = 0;
};

// N(0, 1) from std::mt19937_64 seeded with seed (s3gen::standard_normal), mel_bins values a frame.
std::unique_ptr<FlowNoise> drawn_flow_noise(uint64_t seed, size_t mel_bins);
// The buffer's columns from its first. Throws InvalidArgument when its mel_bins differ or a value is
// not finite, and when the timeline runs past its last column.
std::unique_ptr<FlowNoise> fixed_flow_noise(const FlowNoiseBuffer &buffer, size_t mel_bins);

} // namespace chatterbox
