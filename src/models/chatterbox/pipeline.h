#pragma once
// The end-to-end engine (spec overview.md §2.3, §5): one model loaded once, then many requests.
//
//   text -> split into pieces (sentences, clauses) -> per piece:
//       punc_norm -> EnTokenizer -> T3 generate (sampling, seed) -> drop_invalid_tokens
//       -> S3Gen flow (noise from the seed) -> HiFT (seeded) -> wave
//   pieces joined with short pauses (a sentence pause, a shorter clause pause), each piece faded out
//   at its end so the joins do not click (S3Gen already fades every piece in).
//   voice conversion: source audio -> S3Tokenizer tokens -> flow with the target voice -> HiFT.
//
// Streaming: the flow and HiFT run over chunks of tokens while T3 is still generating (see
// ChunkPlan); each piece of the final waveform goes to on_chunk as soon as it is final, and the
// pieces concatenated are exactly the returned wave. Without streaming the same machinery runs one
// window per piece when it fits the flow's and HiFT's length limits (the reference computation),
// else windows as large as they allow — so no length cap beyond memory.
//
// A Pipeline serves one request at a time (its sessions are per-request state).

#include "core/backend.h"
#include "core/error.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/voice.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace chatterbox {

// Thrown when a request is stopped by its cancel flag or a callback.
class Cancelled : public Error {
  public:
    using Error::Error;
};

// Thrown for a request parameter out of range (before any computation).
class InvalidArgument : public Error {
  public:
    using Error::Error;
};

struct PipelineOptions {
    std::string model_path; // official folder or GGUF
    BackendOptions backend;
};

// How the token stream is cut for the flow and HiFT (in speech tokens and mel frames).
struct ChunkPlan {
    int first_chunk_tokens = 20;   // the first audio needs this many tokens (0.8 s of speech)
    int chunk_tokens = 50;         // later chunks
    int left_context_tokens = 12;  // earlier tokens the flow sees again (its attention is bidirectional)
    int mel_crossfade_frames = 4;  // flow windows meet with a linear cross-fade of this many mel frames
    int hift_context_frames = 8;   // mel frames HiFT sees on each side of what it emits
    int wave_crossfade_frames = 2; // HiFT windows meet with a raised-cosine cross-fade (40 ms)

    // The plan of a request without streaming: windows as long as the limits allow.
    static ChunkPlan offline();
    void validate() const;
};

struct SynthesisOptions {
    float cfg_weight = 0.5f;
    float temperature = 0.8f;
    float repetition_penalty = 1.2f;
    float min_p = 0.05f;
    float top_p = 1.0f;
    uint64_t seed = 0;
    int max_new_tokens = 1000; // per T3 pass (per text piece)

    bool stream = false;
    ChunkPlan chunks;                                    // used when streaming
    std::function<bool(const float *, size_t)> on_chunk; // false: cancel
    std::function<void(const char *stage, float fraction)> on_progress;
    const volatile int *cancel = nullptr; // nonzero: stop soon

    float sentence_pause_seconds = 0.25f;
    float clause_pause_seconds = 0.12f;

    // Throws InvalidArgument naming the parameter, its value and the accepted range.
    void validate(int max_new_tokens_limit) const;
};

struct SynthesisResult {
    std::vector<float> wave; // 24 kHz mono in [-1, 1]
    int sample_rate = 24000;
    double seconds_to_first_audio = 0; // to the first chunk (streaming) or to the end
    double seconds_total = 0;
    int pieces = 0;        // text pieces synthesised
    int speech_tokens = 0; // after drop_invalid_tokens, all pieces
};

class Pipeline {
  public:
    explicit Pipeline(const PipelineOptions &options);
    ~Pipeline();
    Pipeline(const Pipeline &) = delete;
    Pipeline &operator=(const Pipeline &) = delete;

    const ModelFiles &files() const;
    int sample_rate() const;
    std::string description() const; // variant, weight type, backend

    // The voice models (VoiceEncoder, CAMPPlus, S3Tokenizer), bound on first use.
    const VoiceBuilder &voice_builder();
    // The model's built-in voice with this exaggeration; throws when the model has none.
    Voice builtin_voice(float exaggeration) const;

    // Text of any length. Throws InvalidArgument for text with nothing to say or bad options,
    // Cancelled when stopped, Error otherwise.
    SynthesisResult synthesize(std::string_view text, const Voice &voice, const SynthesisOptions &options);
    // Voice conversion of a recording (any sample rate) into `target`'s voice; uses the seed,
    // streaming, callbacks and cancel of options.
    SynthesisResult convert(const audio::Audio &source, const Voice &target, const SynthesisOptions &options);

    // The text pieces synthesize() makes of `text` (sentences, cut to the T3 text budget).
    std::vector<std::string> text_pieces(std::string_view text) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace chatterbox
