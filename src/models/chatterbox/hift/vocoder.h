#pragma once
// The HiFT vocoder: 80-bin mel (80, T) at 50 Hz -> 24 kHz waveform of 480 T samples
// (HiFTGenerator.inference + S3Gen's trim_fade, spec hift.md, s3gen.md §7):
//
//   f0     = F0Predictor(mel)                                  graph, (T)
//   s      = sine_source(f0, noise)                            host, (480 T)
//   heads  = Generator(mel, source_stft(s))                    graph, (18, 120 T + 1)
//   raw    = clamp(istft(min(exp(mag), 100), sin(phase)))      host, (480 T)
//   wave   = trim_fade(raw)                                    first 20 ms zero, next 20 ms fade in
//
//   hift::VocoderModel model(store, backend);                 // binds every `s3gen.mel2wav.*` tensor
//   hift::VocoderSession vocoder(model, session_backend);             // one per session
//   std::vector<float> wave = vocoder.synthesize(mel, nullptr, seed);
//
// Tensors: every `mel2wav.*` tensor of the official s3gen.safetensors is used; none is ignored.
// VocoderModel holds the immutable weights (shareable); a VocoderSession holds one session's graphs, built
// for a mel length on first use and reused while the length repeats, or vocodes in a batch shared
// with other sessions (vocoder_batch.h).

#include "core/backend.h"
#include "core/cancel.h"
#include "modules/module_weights.h"
#include "core/weight_store.h"
#include "models/chatterbox/hift/f0_predictor.h"
#include "models/chatterbox/hift/generator.h"
#include "models/chatterbox/hift/hift_hparams.h"
#include "models/chatterbox/hift/sine_source.h"
#include "models/chatterbox/hift/vocoder_graphs.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace chatterbox::hift {

// What a golden run taps along the way.
struct VocoderTaps {
    std::vector<float> f0;     // (T) Hz
    std::vector<float> source; // (480 T)
    std::vector<float> raw;    // (480 T) before trim_fade
};

// S3Gen's trim_fade in place: samples [0, n) times 0, [n, 2n) times (cos(linspace(pi, 0, n)) + 1) / 2.
void apply_trim_fade(std::vector<float> &wave, int64_t fade_samples);

class VocoderModel {
  public:
    // prefix: where mel2wav lives in the store ("s3gen.mel2wav."). Every problem with the tensors
    // (missing, mis-shaped, unexpected) is reported in one Error.
    VocoderModel(const WeightStore &store, Backend &backend, const HiftHParams &hp,
                 const std::string &prefix = "s3gen.mel2wav.");
    VocoderModel(const VocoderModel &) = delete;
    VocoderModel &operator=(const VocoderModel &) = delete;

    const HiftHParams &hparams() const { return hp_; }
    size_t weight_bytes() const { return weights_.bytes(); }
    const F0Predictor &f0_predictor() const { return f0_predictor_; }
    const SourceMerge &source_merge() const { return source_merge_; }
    const Generator &generator() const { return generator_; }

    // mel: (80, T) channel-major. Throws Error for an empty mel, a size that is not whole 80-bin
    // frames, more than max_frames frames or a non-finite value. Returns T.
    int64_t validate(const std::vector<float> &mel) const;

  private:
    HiftHParams hp_;
    ModuleWeights weights_;
    F0Predictor f0_predictor_;
    SourceMerge source_merge_;
    Generator generator_;
};

class VocoderBatch;

class VocoderSession {
  public:
    // backend: where this session's graphs run. batch: where synthesize() vocodes (vocoder_batch.h),
    // which drops the request when cancel (optional) is set while it waits; nullptr: alone, on backend.
    VocoderSession(const VocoderModel &model, Backend &backend, VocoderBatch *batch = nullptr,
                   const CancelFlag *cancel = nullptr);
    ~VocoderSession();
    VocoderSession(const VocoderSession &) = delete;
    VocoderSession &operator=(const VocoderSession &) = delete;

    const HiftHParams &hparams() const { return model_.hparams(); }
    int64_t validate(const std::vector<float> &mel) const { return model_.validate(mel); }

    // The whole vocoder with trim_fade: 480 T samples in [-0.99, 0.99]. The source noise is the
    // injected one (golden runs; it must cover 480 T samples), or drawn by draw_source_noise from
    // TorchGenerator(seed), as torch.manual_seed(seed) then the official call would draw it. Same seed, same mel ->
    // bit-identical output alone; in a batch, the same within the rounding of differently shaped matrix products.
    std::vector<float> synthesize(const std::vector<float> &mel, const SourceNoise *injected = nullptr,
                                  uint64_t seed = 0, VocoderTaps *taps = nullptr);

    // The stages, for golden runs and tests.
    std::vector<float> predict_f0(const std::vector<float> &mel);                               // (T)
    std::vector<float> source(const std::vector<float> &f0, const SourceNoise &noise) const;    // (480 T)
    std::vector<float> decode(const std::vector<float> &mel, const std::vector<float> &source); // raw wave

  private:
    VocoderGraphs &graphs(int64_t frames);

    const VocoderModel &model_;
    Backend &backend_;
    std::unique_ptr<VocoderGraphs> graphs_; // for the last mel length used
    VocoderBatch *const batch_;
    const CancelFlag *const batch_cancel_;
};

} // namespace chatterbox::hift
