#pragma once
// Speech tokens -> audio for one text piece, window by window, while T3 is still generating
// (spec overview.md §5). T3 streams exactly; the flow's encoder and estimator attend to the whole
// sequence, so exact chunking is impossible: the flow re-runs on overlapping windows (ChunkPlan),
// consecutive windows' mels are cross-faded, HiFT runs with context on both sides and its outputs
// are cross-faded too. Every emitted block is final, so the blocks concatenated are the piece's
// audio. ChunkPlan::offline() runs one window per piece whenever it fits the stages' limits: the
// reference computation.
//
// The stages are reached through FlowStage / VocoderStage, so the arithmetic is tested with fakes.

#include "models/chatterbox/flow_noise.h"
#include "models/chatterbox/s3gen/flow.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace chatterbox {

// How the token stream is cut for the flow and HiFT (in speech tokens and mel frames).
struct ChunkPlan {
    int first_chunk_tokens = 20;   // the first audio needs this many tokens (0.8 s of speech)
    int chunk_tokens = 50;         // later chunks
    int left_context_tokens = 12;  // earlier tokens the flow sees again (its attention is bidirectional)
    int mel_crossfade_frames = 4;  // flow windows meet with a linear cross-fade of this many mel frames
    int hift_context_frames = 8;   // mel frames HiFT sees on each side of what it emits
    int wave_crossfade_frames = 2; // HiFT windows meet with a raised-cosine cross-fade (40 ms)
    // The flow windows see only the voice prompt's last prompt_tokens tokens and their mel frames
    // (0: all of it). The flow's cost grows with prompt + window length, attention quadratically, so
    // a 10 s prompt would make each window cost as much as seconds of offline speech; 3 s of the
    // voice (75 tokens) keep the timbre (the x-vector is the whole recording's either way).
    int prompt_tokens = 75;

    // The plan of a request without streaming: windows as long as the limits allow.
    static ChunkPlan offline();
    // Throws InvalidArgument naming the field out of range.
    void validate() const;
};

// splitmix64: independent seeds for the pieces and the random draws of one request.
uint64_t mix_seed(uint64_t seed, uint64_t stream);

// The flow as the streaming code uses it: the generated mel (mel_bins, frames) of tokens spoken in
// reference's voice; noise is (mel_bins, token_mel_ratio · (prompt tokens + tokens)).
class FlowStage {
  public:
    virtual ~FlowStage() = default;
    virtual s3gen::Mel generate(const std::vector<int32_t> &tokens, const s3gen::FlowReference &reference,
                                std::vector<float> noise) = 0;
};

// The vocoder as the streaming code uses it: mel (mel_bins, T) -> samples_per_frame · T samples.
class VocoderStage {
  public:
    virtual ~VocoderStage() = default;
    virtual std::vector<float> synthesize(const std::vector<float> &mel, uint64_t seed) = 0;
};

// The numbers of the stages that the window arithmetic needs.
struct StageGeometry {
    size_t mel_bins = 0;
    size_t token_mel_ratio = 0;   // mel frames per speech token
    size_t pre_lookahead = 0;     // tokens of right context the flow's encoder looks at
    size_t max_flow_tokens = 0;   // prompt + generated tokens of one flow call
    size_t samples_per_frame = 0; // samples per mel frame
    size_t max_vocoder_frames = 0;
    int sample_rate = 0;
    // Samples cut from the end of a piece of more than one token (the multilingual last-token trim);
    // the vocoder's held-back context (ChunkPlan::hift_context_frames) always covers them.
    size_t trim_final_samples = 0;
};

struct VocodingStages {
    StageGeometry geometry;
    FlowStage &flow;
    VocoderStage &vocoder;
};

// Where a piece's audio goes: the request's output, progress and cancellation.
class AudioSink {
  public:
    virtual ~AudioSink() = default;
    virtual void emit(const float *samples, size_t n) = 0;
    virtual void progress(const char *stage, float fraction) = 0;
    virtual bool cancel_requested() const = 0;
    void check_cancel() const; // throws Cancelled once cancel_requested()
};

// One piece: tokens arrive with add_token (while T3 generates, when streaming) and finish() flushes
// the rest. Frame bookkeeping: with a prompt of F mel frames and Np tokens at r frames per token,
// the piece's output mel has r·N − δ frames, δ = F − r·Np, and token t starts at output frame
// r·t − δ; a flow window over tokens [w0, w1) yields output frames from r·w0.
class PieceVocalizer {
  public:
    // seed: the piece's; piece/pieces place its progress within the request. fixed_noise: the flow's
    // noise from this buffer (flow_noise.h) instead of drawn from the seed.
    PieceVocalizer(const VocodingStages &stages, AudioSink &sink, const s3gen::FlowReference &reference,
                   const ChunkPlan &plan, uint64_t seed, int piece, int pieces,
                   const FlowNoiseBuffer *fixed_noise = nullptr);

    // One speech token; runs the flow and the vocoder when a chunk is complete.
    void add_token(int32_t token);
    void finish();
    size_t tokens() const { return tokens_.size(); }

  private:
    size_t chunk_size() const;
    size_t frame_of(size_t t) const;
    s3gen::Mel flow_window(size_t w0, size_t w1);
    void run_flow(size_t t0, size_t t1, bool last);
    void run_vocoder(bool last);
    void fade_out(std::vector<float> &block) const;
    float fraction(size_t tokens_done) const;
    float fraction_of_frames(size_t done, size_t total) const;

    const VocodingStages stages_;
    const StageGeometry geometry_;
    AudioSink &sink_;
    const ChunkPlan plan_;
    const s3gen::FlowReference reference_; // the voice prompt as the flow windows see it (plan_.prompt_tokens)
    const uint64_t seed_;
    const int piece_, pieces_;
    std::unique_ptr<FlowNoise> noise_;
    size_t prompt_frames_ = 0;
    int64_t delta_ = 0;
    size_t max_chunk_ = 0;

    std::vector<int32_t> tokens_;
    std::vector<float> prompt_noise_, generated_noise_; // frame-major (frames, mel_bins)
    size_t flow_done_ = 0;                              // tokens whose mel is final
    std::vector<float> mel_;                            // final mel, frame-major
    std::vector<float> pending_mel_;  // the last window's frames after the final ones, for the cross-fade
    size_t emitted_frames_ = 0;       // mel frames whose samples were emitted
    std::vector<float> pending_wave_; // the last vocoder window's samples after the emitted ones
    uint64_t vocoder_calls_ = 0;
};

} // namespace chatterbox
