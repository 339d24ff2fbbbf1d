#pragma once
// VoiceEncoder hyper-parameters (spec voice_encoder.md §1). Metadata keys "chatterbox.ve.*". The
// encoder and the voice builder are written for these sizes alone, so every field is fixed: a
// model declaring other values is refused by name rather than run wrongly.

#include "models/chatterbox/hparam_fields.h"

#include <cstdint>

namespace chatterbox::voice_encoder {

constexpr int64_t kMelBins = 40;
constexpr int64_t kPartialFrames = 160;
constexpr int64_t kEmbeddingSize = 256;
constexpr int kSampleRate = 16000;

struct VoiceEncoderHParams {
    int64_t mel_bins = kMelBins;
    int64_t lstm_layers = 3;
    int64_t embedding = kEmbeddingSize; // LSTM hidden size and projection size
    int64_t partial_frames = kPartialFrames;
    int sample_rate = kSampleRate;

    static const HparamTable<VoiceEncoderHParams> &fields() {
        using H = VoiceEncoderHParams;
        static const HparamTable<H> table = {
            {"chatterbox.ve.mel_bins", &H::mel_bins, FieldRule::fixed},
            {"chatterbox.ve.lstm_layers", &H::lstm_layers, FieldRule::fixed},
            {"chatterbox.ve.embedding", &H::embedding, FieldRule::fixed},
            {"chatterbox.ve.partial_frames", &H::partial_frames, FieldRule::fixed},
            {"chatterbox.ve.sample_rate", &H::sample_rate, FieldRule::fixed},
        };
        return table;
    }
    // Every field is fixed: throws Error naming a key that is not the supported value.
    void validate() const { validate_fields(fields(), *this); }
};

} // namespace chatterbox::voice_encoder
