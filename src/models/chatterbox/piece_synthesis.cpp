#include "models/chatterbox/piece_synthesis.h"

#include "models/chatterbox/t3/speech_guards.h"

#include <optional>

namespace chatterbox {

namespace {

// The speech tokens on their way to the vocalizer: with the stop rules, trailing silence is trimmed
// to a natural pause, streaming or not.
class TrimmedSpeech {
  public:
    TrimmedSpeech(const t3::HParams &hp, const t3::SamplingParams &sampling, PieceVocalizer &vocalizer)
        : vocalizer_(vocalizer) {
        if (sampling.guards.stops && !sampling.ignore_eos) trimmer_.emplace(hp.guards.silence_token, hp.guards.natural_pause);
    }
    void speak(int32_t token) {
        if (!trimmer_) return vocalizer_.add_token(token);
        for (int32_t kept : trimmer_->push(token)) vocalizer_.add_token(kept);
    }
    void finish() {
        if (trimmer_)
            for (int32_t kept : trimmer_->finish()) vocalizer_.add_token(kept);
    }

  private:
    std::optional<t3::TailSilenceTrimmer> trimmer_;
    PieceVocalizer &vocalizer_;
};

} // namespace

PieceResult synthesize_piece(const t3::Executor &t3, const VocodingStages &stages, AudioSink &sink,
                             const PieceRequest &piece) {
    const t3::HParams &hp = t3.session().model().hparams();
    const int steps = t3::step_limit(hp, piece.framed_text, piece.sampling); // max_new_tokens or the length bound
    PieceVocalizer vocalizer(stages, sink, *piece.reference, piece.plan, piece.sampling.seed, piece.index, piece.count,
                             piece.flow_noise);
    TrimmedSpeech speech(hp, piece.sampling, vocalizer);
    // Streaming filters the tokens as they come: a start-of-speech token after speech (the whole
    // piece's filter would drop what came before it) cannot take back audio already out.
    t3::SpeechTokenFilter filter(hp);

    t3::GenerationHooks hooks;
    hooks.step_logits = false;
    hooks.generator = piece.t3_generator;
    hooks.on_step = [&](const t3::StepRecord &step) {
        sink.progress("t3", (float(piece.index) + float(step.step + 1) / float(steps)) / float(piece.count));
        if (piece.stream && filter.push(step.token) == t3::SpeechTokenFilter::Verdict::speak) speech.speak(step.token);
        return !sink.cancel_requested();
    };
    PieceResult result;
    result.generated = t3.generate(*piece.cond, piece.framed_text, piece.sampling, hooks, piece.prefix);
    sink.check_cancel();
    if (!piece.stream)
        for (int32_t token : t3::drop_invalid_tokens(result.generated.tokens, hp)) speech.speak(token);
    speech.finish();
    const size_t spoken = vocalizer.tokens();
    for (int32_t token : piece.trailing_tokens) vocalizer.add_token(token);
    vocalizer.finish();
    result.speech_tokens = int(spoken);
    return result;
}

} // namespace chatterbox
