#pragma once
// Voice conditionals (spec overview.md §2.2, tts.py prepare_conditionals and its Conditionals): what
// a voice is to the engine, built once from a reference recording and reused for every synthesis.
//
//   T3 part:    speaker embedding (VoiceEncoder over the whole reference at 16 kHz),
//               ≤ 150 prompt speech tokens (S3Tokenizer over the first 6 s), exaggeration
//   S3Gen part: prompt tokens + prompt mel (first 10 s at 24 kHz), CAMPPlus x-vector
//
//   VoiceBuilder builder(files, backend);              // binds VE, CAMPPlus, S3Tokenizer (immutable)
//   VoiceConditionals voice = builder.from_file(session_backend, "ref.wav", 0.5f);
//   save_voice(voice, "ref.voice");
//   VoiceConditionals same = load_voice("ref.voice");  // bit-identical
//   VoiceConditionals builtin = builtin_voice(files);  // conds.pt / the GGUF's conds.*

#include "audio/audio_file.h"
#include "audio/features.h"
#include "audio/matrix.h"
#include "core/backend.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/s3gen/flow.h"
#include "models/chatterbox/t3/cond_encoder.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace chatterbox {

// A voice: the conditioning of T3 and of the S3Gen flow (what the public API's Voice holds).
struct VoiceConditionals {
    t3::Conditioning t3;                // speaker_emb (256), prompt_tokens (≤ 150; Turbo ≤ 375), exaggeration
    s3gen::FlowReference s3gen;         // prompt_tokens (Np), prompt_mel (F, 80) frame-major, xvector (192)
    Variant variant = Variant::english; // the model it was built with (see voice_fits)
};

// Reference recordings a voice is built from: long enough for every model's smallest input
// (CAMPPlus needs 45 ms), short enough that the VoiceEncoder's pass over the whole signal stays quick.
constexpr double kMinReferenceSeconds = 0.1;
constexpr double kMaxReferenceSeconds = 600.0;

// How a variant treats a reference recording before any model sees it (prepare_conditionals of
// tts.py / tts_turbo.py): the shortest it accepts and an optional loudness normalisation.
struct ReferencePolicy {
    double min_seconds = kMinReferenceSeconds;
    bool min_is_exclusive = false;       // Turbo asserts "longer than 5 s"
    std::optional<double> loudness_lufs; // the 24 kHz reference is normalised to this first
    // Each variant's is its VariantSpec::reference (variant_spec.h).
};

// What the caller chooses about a voice built from a recording.
struct VoiceOptions {
    float exaggeration = 0.5f;
    // Turbo's norm_loudness (tts_turbo.py prepare_conditionals): false keeps the recording's own
    // loudness where the variant's ReferencePolicy would normalise it; other variants never do.
    bool normalize_loudness = true;
};

// The reference at 24 kHz as the variant's models see it (librosa.load(sr=24000) with soxr_hq, then
// the loudness step). Throws Error for unusable audio (rate, length, non-finite, silence) naming
// the policy's minimum.
std::vector<float> prepare_reference(const audio::AudioBuffer &reference, const ReferencePolicy &policy);

// True when a voice built with a model of voice_variant serves a model of model_variant: both build
// voices the same way (ReferencePolicy and T3 prompt length), as English and multilingual do, and
// Turbo and Nano.
bool voice_fits(Variant voice_variant, Variant model_variant);
// Throws InvalidArgument naming both variants unless voice_fits.
void check_voice_fits(const VoiceConditionals &voice, Variant model_variant);

// The intermediate results of one build, for golden runs and diagnostics (filled when asked for).
// Names follow the golden arrays of the official run.
struct VoiceTaps {
    std::vector<float> ref_wav_24k;            // the whole reference at 24 kHz (librosa.load, soxr_hq, loudness)
    std::vector<float> ref_wav_16k_librosa;    // ref_wav_24k -> 16 kHz (soxr_hq): VoiceEncoder, T3 prompt
    std::vector<float> ref_wav_16k_torchaudio; // its first 10 s -> 16 kHz (torchaudio): CAMPPlus, S3Gen prompt
    audio::Matrix s3gen_ref_mel_24k;           // (80, F) of the first 10 s; prompt_mel is its transpose
    audio::Matrix s3tok_logmel_s3genprompt;    // (128, T)
    audio::Matrix s3tok_logmel_t3prompt;       // (128, T) of the first 6 s, before the max_len cut
    std::vector<float> ve_trimmed_wav16k;      // the VoiceEncoder's silence-trimmed input
    audio::SampleSpan ve_trim_interval;        // ... as the span of ref_wav_16k_librosa it keeps
    audio::Matrix ve_mel;                      // (T, 40)
    audio::Matrix campplus_fbank;              // (T, 80), mean-subtracted

    std::vector<float> ve_partial_embeds; // (partials, 256)
    int64_t ve_partials = 0;
    std::vector<int32_t> s3tok_tokens_t3prompt;      // raw tokenizer output for the T3 prompt
    std::vector<float> s3tok_projection_t3prompt;    // (tokens, 8)
    std::vector<int32_t> s3tok_tokens_s3genprompt;   // raw tokenizer output for the S3Gen prompt
    std::vector<float> s3tok_projection_s3genprompt; // (tokens, 8)
};

class VoiceBuilder {
  public:
    // Binds the three voice models of `files` (ve, s3gen.speaker_encoder, s3gen.tokenizer) with their
    // weights on backend; throws Error when the model lacks them. The builder is immutable: every call
    // computes on the backend it is given (the caller's session), so sessions may share it.
    VoiceBuilder(const ModelFiles &files, Backend &backend);
    ~VoiceBuilder();
    VoiceBuilder(const VoiceBuilder &) = delete;
    VoiceBuilder &operator=(const VoiceBuilder &) = delete;

    // From any audio file audio::read_audio accepts, prepared by the model's ReferencePolicy. Throws
    // Error for unusable audio (shorter than the policy's minimum, longer than kMaxReferenceSeconds,
    // silent, non-finite ...) with a message naming the file.
    VoiceConditionals from_file(Backend &backend, const std::string &path, const VoiceOptions &options,
                                VoiceTaps *taps = nullptr) const;
    VoiceConditionals from_audio(Backend &backend, const audio::AudioBuffer &audio, const VoiceOptions &options,
                                 VoiceTaps *taps = nullptr) const;
    VoiceConditionals from_file(Backend &backend, const std::string &path, float exaggeration = 0.5f,
                                VoiceTaps *taps = nullptr) const {
        return from_file(backend, path, VoiceOptions{exaggeration}, taps);
    }
    VoiceConditionals from_audio(Backend &backend, const audio::AudioBuffer &audio, float exaggeration = 0.5f,
                                 VoiceTaps *taps = nullptr) const {
        return from_audio(backend, audio, VoiceOptions{exaggeration}, taps);
    }

    // S3 speech tokens of a whole recording (16 kHz, no length cut): the source side of voice conversion.
    std::vector<int32_t> speech_tokens(Backend &backend, const audio::AudioBuffer &audio) const;

  private:
    struct Models;
    std::unique_ptr<Models> models_;
};

// The voice stored with the model (conds.pt or the GGUF's conds.* tensors). Throws Error when the model has none.
VoiceConditionals builtin_voice(const ModelFiles &files);

// A voice as a small self-describing file (GGUF with the tensors of VoiceConditionals, a format marker, a version,
// the variant it was built with (absent in the first files, all English) and a checksum of the tensor bytes);
// load_voice validates every shape and value and reports what is wrong. Loading gives back bit-identical conditionals.
void save_voice(const VoiceConditionals &voice, const std::string &path);
VoiceConditionals load_voice(const std::string &path);
// True when the file is a saved voice by its content (GGUF magic and the voice format marker), so a
// CLI can accept either a recording or a voice file whatever its name.
bool is_voice_file(const std::string &path);

} // namespace chatterbox
