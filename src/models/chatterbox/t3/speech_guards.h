#pragma once
// Guards against runaway and hallucinated speech (issue #19), called from the generation loop
// (generate.cpp). Three independent mechanisms, each off unless GuardOptions turns it on, so a plain
// t3::generate call is the official loop unchanged (golden parity):
//
//   * length bound: a piece of n text tokens takes at most length_floor + speech_per_text_token * n
//     speech tokens (GuardHParams, per variant; the rate can be overridden per request);
//   * stop rules: the same speech token repeated max_token_repeat times in a row, or a run of
//     max_tail_silence silence tokens once the text is covered, ends the piece; a trailing run of
//     silence is then trimmed to natural_pause tokens (TailSilenceTrimmer);
//   * the alignment stream analyzer of the multilingual model (spec t3.md §6, AlignmentAnalyzer):
//     from the attention of three heads on the conditional row it suppresses EOS before the text is
//     covered and forces EOS on a long tail or a repetition.
//
// The analyzer is the official heuristic; the length bound and stop rules are this engine's own
// (the official code has none) and apply to every variant through its GuardHParams.

#include <cstdint>
#include <optional>
#include <vector>

namespace chatterbox::t3 {

struct HParams;

// One attention head of the backbone: decoder layer and head index, both 0-based.
struct AttentionHead {
    int layer = 0;
    int head = 0;
};

// Speech tokens run at 25 per second: 25 tokens = 1 s.
struct GuardHParams {
    // Length bound: most speech tokens per text token (the piece's ids, framing excluded), plus a
    // floor every piece gets. Generous on purpose: a slow speaker says ~8 characters a second, i.e.
    // ~3 tokens per English character; 5 leaves room for pauses and exaggeration.
    float speech_per_text_token = 5.0f;
    int length_floor = 50; // 2 s: a one-word piece ("Yes.") still has room for a pause
    // Without the analyzer the text counts as covered (silence may then end the piece) after this
    // many tokens per text token: 1 token (40 ms) per character is faster than anyone speaks.
    float covered_per_text_token = 1.0f;
    int silence_token = 4299;  // S3GEN_SIL (s3gen/const.py): the S3 token of silence
    int max_token_repeat = 50; // the same token 50 times in a row (2 s of one 40-ms unit) is no speech
    int max_tail_silence = 25; // 1 s of silence after the text ends the piece
    int natural_pause = 5;     // trailing silence kept at the end of a piece: 0.2 s
    // The alignment analyzer's heads (LLAMA_ALIGNED_HEADS); empty: the variant has no analyzer.
    std::vector<AttentionHead> aligned_heads;

    // The English rates with the Llama T3's aligned heads (LLAMA_ALIGNED_HEADS). Each variant's
    // rates are its VariantSpec's (variant_spec.h).
    static GuardHParams with_aligned_heads();
};

// What one request turns on. The defaults are all off (the official loop); the pipeline's are
// SynthesisParams' (length bound and stops on, the analyzer off).
struct GuardOptions {
    bool length_bound = false;
    float speech_per_text_token = 0; // 0: the model's rate (GuardHParams::speech_per_text_token)
    bool stops = false;              // repetition and silence-tail stops, trailing silence trimmed
    bool alignment = false;          // the alignment stream analyzer (a model with aligned heads only)
};

// Why a piece's generation ended.
enum class PieceEnd {
    eos,          // the model took end-of-speech
    max_tokens,   // max_new_tokens steps
    length_bound, // the bound from the text
    token_repeat, // the same token max_token_repeat times
    silence_tail, // max_tail_silence silence tokens after the text
    alignment,    // end-of-speech forced by the alignment analyzer
    stopped,      // a hook stopped it (cancellation) or teacher forcing ran out
};
const char *piece_end_name(PieceEnd end); // "eos", "max_tokens", "length_bound", ...

// The speech tokens the length bound grants a piece of text_tokens ids (framing excluded); rate 0
// takes the model's.
int length_bound(const GuardHParams &guards, int text_tokens, float rate = 0);

// The alignment stream analyzer (alignment_stream_analyzer.py at eaf9354, spec t3.md §6), fed the
// mean attention of the aligned heads on the conditional row, one chunk per step.
class AlignmentAnalyzer {
  public:
    // The text occupies key positions [text_begin, text_end) (start/stop text tokens included).
    AlignmentAnalyzer(int text_begin, int text_end, int32_t eos_token);

    // One step, on the CFG-combined logits before the repetition penalty. rows: n_rows attention rows
    // of row_length values each (all key positions): at step 0 the prefill rows after the text (the
    // BOS rows), later the new token's row. last_token: the last id of the generated ids (the BOS at
    // step 0). Suppresses or forces EOS in logits; returns true when it forced EOS.
    bool step(const float *rows, int n_rows, int row_length, int32_t last_token, std::vector<float> &logits);

    int text_length() const { return text_end_ - text_begin_; } // S
    int frames() const { return frames_; }                      // T: rows of the alignment so far
    int text_position() const { return text_position_; }
    bool complete() const { return complete_; }
    // What the last step found (the official AlignmentAnalysisResult and the token check).
    bool long_tail() const { return long_tail_; }
    bool alignment_repetition() const { return alignment_repetition_; }
    bool token_repetition() const { return token_repetition_; }
    bool discontinuity() const { return discontinuity_; }

    // The values the official code writes into the logits.
    static constexpr float kSuppressed = -32768.0f; // -(2**15)
    static constexpr float kForced = 32768.0f;

  private:
    int text_begin_, text_end_;
    int32_t eos_token_;
    int step_ = 0;   // curr_frame_pos
    int frames_ = 0; // T
    int text_position_ = 0;
    bool complete_ = false;
    int completed_at_ = -1;
    // Over the rows after completed_at: the column sums of the last 3 text columns, and the sum of
    // each row's largest value among the columns before the last 5. Rows never change once added,
    // so the official recomputation over A[completed_at:] is these running sums.
    double tail_sums_[3] = {0, 0, 0};
    double repeated_mass_ = 0;
    std::vector<int32_t> last_tokens_; // at most 8
    bool long_tail_ = false, alignment_repetition_ = false, token_repetition_ = false, discontinuity_ = false;
};

// Trailing silence: silence tokens are held back while they run; a later speech token releases
// them, the end of the piece releases at most natural_pause of them. Streaming and offline pieces
// go through the same trimmer, so both give the same tokens. natural_pause < 0 keeps all silence.
class TailSilenceTrimmer {
  public:
    TailSilenceTrimmer(int32_t silence_token, int natural_pause)
        : silence_token_(silence_token), natural_pause_(natural_pause) {}
    // The tokens that are final now (possibly none, possibly held ones followed by token).
    std::vector<int32_t> push(int32_t token);
    std::vector<int32_t> finish(); // the kept part of a trailing silence run
    int dropped() const { return dropped_; }

  private:
    int32_t silence_token_;
    int natural_pause_;
    int held_ = 0;
    int dropped_ = 0;
};

// The length bound and stop rules of one piece, step by step.
class SpeechGuards {
  public:
    // text_tokens: the piece's ids without framing. max_new_tokens: the request's step limit.
    SpeechGuards(const HParams &hp, int text_tokens, const GuardOptions &options, int max_new_tokens);

    // Steps the generation may take: max_new_tokens, or the length bound when it is lower.
    int step_limit() const { return step_limit_; }
    bool bound_by_text() const { return bound_by_text_; } // the length bound is the step limit
    // After each token (EOS excluded): the stop rule that ends the piece after this token, if any.
    // text_covered: the analyzer's verdict when it runs, else nullopt (the count rule decides).
    std::optional<PieceEnd> after_token(int32_t token, std::optional<bool> text_covered = std::nullopt);

  private:
    const GuardHParams &hp_;
    bool stops_;
    int step_limit_;
    bool bound_by_text_ = false;
    int covered_after_; // tokens after which the text counts as covered (no analyzer)
    int steps_ = 0;
    int32_t run_token_ = -1;
    int run_length_ = 0;
};

} // namespace chatterbox::t3
