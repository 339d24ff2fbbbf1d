#pragma once
// The vocoder's graphs (hift/vocoder.h) for a batch of mels of their own lengths: the F0
// predictor, and the generator over the source's STFT. Each request's (channels, length) input is
// padded with zeros to the batch's longest and masked (padding_mask.h), so each gets the values
// it gets alone; a batch of one, or of equal lengths, has no masks. The two graphs are built on
// first use and reused while the lengths repeat.
//
//   VocoderGraphs graphs(model, backend, {T1, T2});
//   std::vector<std::vector<float>> f0 = graphs.predict_f0({&mel1, &mel2});
//   std::vector<std::vector<float>> raw = graphs.decode({&mel1, &mel2}, {&source1, &source2});

#include "core/backend.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace chatterbox::hift {

class VocoderModel;

class VocoderGraphs {
  public:
    // frames: each request's mel frames (each 1 .. max_frames, validated by the model).
    VocoderGraphs(const VocoderModel &model, Backend &backend, std::vector<int64_t> frames);
    ~VocoderGraphs();
    VocoderGraphs(const VocoderGraphs &) = delete;
    VocoderGraphs &operator=(const VocoderGraphs &) = delete;

    const std::vector<int64_t> &frames() const { return frames_; }
    int64_t longest() const { return longest_; }

    // mels[r]: (80, frames[r]) channel-major -> f0[r]: (frames[r]) Hz.
    std::vector<std::vector<float>> predict_f0(const std::vector<const std::vector<float> *> &mels);
    // mels[r] and sources[r] (480 frames[r] samples) -> the raw wave (480 frames[r]) before
    // trim_fade, each clamped to +-0.99.
    std::vector<std::vector<float>> decode(const std::vector<const std::vector<float> *> &mels,
                                           const std::vector<const std::vector<float> *> &sources);

  private:
    struct F0Graph;
    struct DecoderGraph;

    const VocoderModel &model_;
    Backend &backend_;
    std::vector<int64_t> frames_;
    int64_t longest_ = 0;
    std::unique_ptr<F0Graph> f0_graph_;
    std::unique_ptr<DecoderGraph> decoder_graph_;
};

} // namespace chatterbox::hift
