#pragma once
// CAMPPlus hyper-parameters (spec campplus.md). Metadata keys "chatterbox.campplus.*". The network
// and the voice builder are written for these sizes alone, so every field is fixed: a model
// declaring other values is refused by name rather than run wrongly.

#include "models/chatterbox/hparam_fields.h"

#include <cstdint>

namespace chatterbox::campplus {

constexpr int64_t kFbankBins = 80;
constexpr int64_t kEmbeddingSize = 192;
// The 1-D network halves the frame rate; the unbiased standard deviation needs two frames after it.
constexpr int64_t kMinFrames = 3;
// An hour of 10 ms frames: beyond this the 2-D head's intermediate buffers grow past reason.
constexpr int64_t kMaxFrames = 360000;

struct CampPlusHParams {
    int64_t fbank_bins = kFbankBins;
    int64_t embedding = kEmbeddingSize;
    int64_t min_frames = kMinFrames;
    int64_t max_frames = kMaxFrames;

    static const HparamTable<CampPlusHParams> &fields() {
        using H = CampPlusHParams;
        static const HparamTable<H> table = {
            {"chatterbox.campplus.fbank_bins", &H::fbank_bins, FieldRule::fixed},
            {"chatterbox.campplus.embedding", &H::embedding, FieldRule::fixed},
            {"chatterbox.campplus.min_frames", &H::min_frames, FieldRule::fixed},
            {"chatterbox.campplus.max_frames", &H::max_frames, FieldRule::fixed},
        };
        return table;
    }
    // Every field is fixed: throws Error naming a key that is not the supported value.
    void validate() const { validate_fields(fields(), *this); }
};

} // namespace chatterbox::campplus
