#pragma once
// S3TokenizerV2 hyper-parameters (spec s3tokenizer.md). Metadata keys "chatterbox.s3tokenizer.*".
// The tokenizer and the voice builder are written for these sizes alone, so every field is fixed:
// a model declaring other values is refused by name rather than run wrongly.

#include "models/chatterbox/hparam_fields.h"

#include <cstdint>

namespace chatterbox::s3tokenizer {

constexpr int64_t kMelBins = 128;
constexpr int64_t kState = 1280;
constexpr int kHeads = 20;
constexpr int kLayers = 6;
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
    int64_t state = kState;
    int heads = kHeads;
    int layers = kLayers;
    int64_t fsq_dims = kFsqDims;
    int vocab = kVocabSize;
    int64_t window_frames = kWindowFrames;
    int64_t window_stride = kWindowStride;
    int64_t overlap_tokens = kOverlapTokens;
    int64_t max_frames = kMaxFrames;

    static const HparamTable<S3TokenizerHParams> &fields() {
        using H = S3TokenizerHParams;
        static const HparamTable<H> table = {
            {"chatterbox.s3tokenizer.mel_bins", &H::mel_bins, FieldRule::fixed},
            {"chatterbox.s3tokenizer.state", &H::state, FieldRule::fixed},
            {"chatterbox.s3tokenizer.heads", &H::heads, FieldRule::fixed},
            {"chatterbox.s3tokenizer.layers", &H::layers, FieldRule::fixed},
            {"chatterbox.s3tokenizer.fsq_dims", &H::fsq_dims, FieldRule::fixed},
            {"chatterbox.s3tokenizer.vocab", &H::vocab, FieldRule::fixed},
            {"chatterbox.s3tokenizer.window_frames", &H::window_frames, FieldRule::fixed},
            {"chatterbox.s3tokenizer.window_stride", &H::window_stride, FieldRule::fixed},
            {"chatterbox.s3tokenizer.overlap_tokens", &H::overlap_tokens, FieldRule::fixed},
            {"chatterbox.s3tokenizer.max_frames", &H::max_frames, FieldRule::fixed},
        };
        return table;
    }
};

} // namespace chatterbox::s3tokenizer
