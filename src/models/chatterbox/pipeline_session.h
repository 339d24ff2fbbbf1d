#pragma once
// One request stream on a PipelineModel: everything a synthesis changes — its own compute backend
// and thread pool, the T3Session (KV cache, graphs), the FlowSession, the VocoderSession (graphs),
// and a cancel flag. Sessions of one model run at the same time on different threads; one
// PipelineSession runs one request at a time. A session made from a Runtime (runtime.h) takes the
// runtime's batches and kept voice prefixes once, when it is made; one made from the PipelineModel
// alone computes on its own.
//
//   text -> split into pieces (sentences, clauses) -> per piece (piece_synthesis.h):
//       punc_norm -> EnTokenizer -> T3 generate (sampling, seed) -> the speech-token filter
//       -> S3Gen flow (noise from the seed) -> HiFT (seeded) -> wave
//   pieces joined with short pauses, each piece faded out at its end so the joins do not click
//   (S3Gen already fades every piece in); then, when params.speed is not 1, time-stretched as it
//   comes (pitch kept, audio/time_stretch.h).
//   voice conversion: source audio -> S3Tokenizer tokens -> flow with the target voice -> HiFT.
//
// Streaming: the flow and HiFT run over chunks of tokens while T3 is still generating
// (streaming.h); each piece of the final waveform goes to on_chunk as soon as it is final, and the
// pieces concatenated are exactly the returned wave.

#include "core/backend.h"
#include "core/cancel.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/runtime.h"
#include "models/chatterbox/streaming.h"
#include "models/chatterbox/synthesis_params.h"
#include "models/chatterbox/t3/executor.h"
#include "models/chatterbox/t3/session.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace chatterbox {

struct SynthesisOptions {
    SynthesisParams params;

    bool stream = false;
    ChunkPlan chunks;                                    // used when streaming
    std::function<bool(const float *, size_t)> on_chunk; // false: cancel
    // false: the final audio goes only to on_chunk (in chunks when streaming, else each text piece
    // and pause as it is done, the same samples) and SynthesisResult::wave stays empty, so memory
    // stays flat however long the text.
    bool keep_wave = true;
    std::function<void(const char *stage, float fraction)> on_progress;
    const volatile int *cancel = nullptr; // the C API's flag: nonzero stops the request soon
    // The flow's noise from this buffer for every text piece (flow_noise.h); values nullptr: drawn
    // from the seed.
    FlowNoiseBuffer flow_noise;

    // Throws InvalidArgument naming the parameter, its value and the accepted range (the table's;
    // synthesize also checks max_new_tokens against the model's speech positions).
    void validate() const;
};

// The checks PipelineSession::synthesize makes before computing anything, for callers that answer bad
// requests before taking a session (the server): throws InvalidArgument for options out of range,
// invalid UTF-8 or text with nothing to say; returns the text's pieces.
std::vector<text::TextPiece> check_synthesis(const PipelineModel &engine, std::string_view text,
                                             const SynthesisOptions &options);

struct SynthesisResult {
    std::vector<float> wave; // 24 kHz mono in [-1, 1]
    int sample_rate = 24000;
    double seconds_to_first_audio = 0; // to the first chunk (streaming, keep_wave false) or to the end
    double seconds_total = 0;
    int pieces = 0;        // text pieces synthesised
    int speech_tokens = 0; // spoken (after the speech-token filter and the silence trim), all pieces
    int t3_steps = 0;      // tokens T3 generated (its prefill gives the first of each piece), all pieces
    // Per text piece: the T3 step that took end-of-speech, -1 when none did; with ignore_eos, the step
    // at which the piece would have ended (t3::GenerationResult::eos_step).
    std::vector<int> eos_steps;
    // Per text piece: why its speech ended (eos, length_bound, ...; t3/speech_guards.h).
    std::vector<t3::PieceEnd> piece_ends;
    int pieces_at_length_bound() const {
        return int(std::count(piece_ends.begin(), piece_ends.end(), t3::PieceEnd::length_bound));
    }
};

struct PipelineSessionOptions {
    int threads = 0;       // CPU threads of the session's backend; 0 takes the engine's setting
    t3::RuntimeOptions t3; // attention path, KV cache type (f32 for exact golden runs)
    nn::AttentionPath flow_attention = s3gen::default_estimator_attention();
};

class PipelineSession {
  public:
    // Alone: no batch, no kept voice prefixes.
    explicit PipelineSession(const PipelineModel &engine, const PipelineSessionOptions &options = {});
    // With the runtime's services; by default with runtime.session_options(), so that its requests
    // join the T3 batch.
    explicit PipelineSession(Runtime &runtime);
    PipelineSession(Runtime &runtime, const PipelineSessionOptions &options);
    ~PipelineSession();
    PipelineSession(const PipelineSession &) = delete;
    PipelineSession &operator=(const PipelineSession &) = delete;

    const PipelineModel &engine() const { return engine_; }
    Backend &backend() { return backend_; }

    // Text of any length. Throws InvalidArgument for text with nothing to say or bad options,
    // Cancelled when stopped, Error otherwise.
    SynthesisResult synthesize(std::string_view text, const VoiceConditionals &voice, const SynthesisOptions &options);
    // Voice conversion of a recording (any sample rate) into `target`'s voice; uses the seed,
    // streaming, callbacks and cancel of options.
    SynthesisResult convert(const audio::AudioBuffer &source, const VoiceConditionals &target,
                            const SynthesisOptions &options);

    // A voice from a recording (see VoiceBuilder), computed on this session's backend.
    VoiceConditionals voice_from_file(const std::string &path, const VoiceOptions &options, VoiceTaps *taps = nullptr);
    VoiceConditionals voice_from_file(const std::string &path, float exaggeration, VoiceTaps *taps = nullptr) {
        return voice_from_file(path, VoiceOptions{exaggeration}, taps);
    }
    VoiceConditionals voice_from_audio(const audio::AudioBuffer &audio, float exaggeration, VoiceTaps *taps = nullptr);

    // Stops the request running now, from any thread: it ends with Cancelled within one graph node
    // (CPU) or one graph (other devices). A request that starts later is not affected.
    void cancel() { cancel_.request(); }

    // The per-request state of each component, for golden runs and benchmarks (Error when the
    // engine lacks the component).
    t3::T3Session &t3();
    s3gen::FlowSession &flow();
    hift::VocoderSession &vocoder();

  private:
    class Request;
    class FlowAdapter;
    class VocoderAdapter;
    PipelineSession(const PipelineModel &engine, Runtime *runtime, const PipelineSessionOptions &options);
    // The flow and vocoder stages of one request (the flow set to its CFM steps).
    VocodingStages vocoding(const SynthesisParams &params);

    const PipelineModel &engine_;
    t3::PrefixCache *const t3_prefixes_; // the runtime's, or nullptr
    Backend backend_;
    CancelFlag cancel_;
    std::unique_ptr<t3::T3Session> t3_;
    std::unique_ptr<t3::Executor> t3_executor_; // alone on t3_, or in the runtime's batch
    std::unique_ptr<s3gen::FlowSession> flow_;
    std::unique_ptr<hift::VocoderSession> vocoder_;
    std::unique_ptr<FlowAdapter> flow_stage_;
    std::unique_ptr<VocoderAdapter> vocoder_stage_;
};

} // namespace chatterbox
