#pragma once
// The VoiceEncoder (spec voice_encoder.md): a 3-layer LSTM over 160-frame partial windows of a
// 40-bin power mel, projected, ReLU'd and L2-normalised per partial, then averaged and normalised
// into the 256-d speaker embedding T3 is conditioned on. Runs on the host (see nn::Lstm).
//
//   WeightStore store;  store.add_safetensors(dir + "/ve.safetensors", "ve.");
//   voice_encoder::VoiceEncoder ve(store, backend);
//   voice_encoder::Embedding e = ve.embed(mel, frames);   // mel: (frames, 40) row-major

#include "core/backend.h"
#include "core/weight_store.h"
#include "models/chatterbox/voice_encoder/voice_encoder_hparams.h"
#include "modules/lstm.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::voice_encoder {

// How the mel is cut into partial windows (embeds_from_wavs defaults). With rate > 0 the step is
// round((16000 / rate) / 160) frames and overlap is unused; with rate 0 it is round(160 (1 - overlap)).
struct PartialOptions {
    double rate = 1.3;
    double overlap = 0.5;
    double min_coverage = 0.8; // double, as in Python: (45 + 83) / 160 >= 0.8 must hold exactly
};

struct PartialLayout {
    int64_t step = 0;          // frames between partial starts
    int64_t count = 0;         // number of partials
    int64_t target_frames = 0; // the mel is zero-padded or truncated to this length
};

// The official get_frame_step + get_num_wins. Throws Error for frames < 1 or options out of range.
PartialLayout partial_layout(int64_t frames, const PartialOptions &options = {});

struct Embedding {
    int64_t partials = 0;
    std::vector<float> partial_embeds; // (partials, 256), each L2-normalised
    std::vector<float> speaker_emb;    // (256): mean of the partial embeddings, L2-normalised
};

class VoiceEncoder {
  public:
    // Weights under `prefix` ("ve." for ve.safetensors added as "ve."); similarity_* (training only)
    // are ignored, anything else unexpected is an error. The backend is unused: the model runs on the host.
    VoiceEncoder(const WeightStore &store, Backend &backend, const VoiceEncoderHParams &hp,
                 const std::string &prefix = "ve.");
    const VoiceEncoderHParams &hparams() const { return hp_; }

    // mel: (frames, 40) row-major linear power mel (melspectrogram(...).T). Throws Error for a wrong
    // size, frames < 1, non-finite values, or a partial whose projection is all zero (cannot normalise).
    // `threads`: how many threads share the partials (nn::Lstm::final_hidden); the result does not
    // depend on it.
    Embedding embed(const std::vector<float> &mel, int64_t frames, const PartialOptions &options = {},
                    int threads = 1) const;

  private:
    VoiceEncoderHParams hp_;
    nn::Lstm lstm_;
    std::vector<float> proj_weight_t_; // (256 in, 256 out)
    std::vector<float> proj_bias_;     // (256)
};

} // namespace chatterbox::voice_encoder
