#pragma once
// S3TokenizerV2 hyper-parameters (spec s3tokenizer.md). Metadata keys "chatterbox.s3tokenizer.*".
// The encoder's width, heads and depth vary; the front end, the FSQ codebook and the windowing are
// what the voice builder is written for, so those are fixed: other values are refused by name.

#include "models/chatterbox/hparam_fields.h"

#include <cstdint>
#include <string>

namespace chatterbox::s3tokenizer {

constexpr int64_t kMelBins = 128;
constexpr int64_t kFsqDims = 8;
constexpr int32_t kVocabSize = 6561; // 3^8
// Inputs longer than one 30 s window are tokenised in windows of 3000 frames every 2600 frames
// (4 s overlap), as the reference's quantize() does; an hour is the most accepted.
constexpr int64_t kWindowFrames = 3000;
constexpr int64_t kWindowStride = 2600;
constexpr int64_t kOverlapTokens = 50; // (4 s overlap // 2) x 25 tokens/s dropped at each inner window edge
constexpr int64_t kMaxFrames = 360000;

struct S3TokenizerHParams {
    int64_t mel_bins = kMelBins;
    int64_t state = 1280;
    int heads = 20;
    int layers = 6;
    int64_t fsq_dims = kFsqDims;
    int vocab = kVocabSize;
    int64_t window_frames = kWindowFrames;
    int64_t window_stride = kWindowStride;
    int64_t overlap_tokens = kOverlapTokens;
    int64_t max_frames = kMaxFrames;

    static const HparamTable<S3TokenizerHParams> &fields();

    // The standard configuration with the sizes the checkpoint in store under prefix
    // ("s3gen.tokenizer.") declares by its tensor shapes.
    static S3TokenizerHParams from_checkpoint(const WeightStore &store, const std::string &prefix);

    // The field rules, then: heads divide the width into even (RoPE) head sizes.
    void validate() const;
};

} // namespace chatterbox::s3tokenizer
