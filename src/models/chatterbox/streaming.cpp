#include "models/chatterbox/streaming.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace chatterbox {

namespace {

// A piece's tail is faded out over this long so the pause after it starts without a click.
constexpr double kPieceFadeOutSeconds = 0.01;

constexpr uint64_t kFlowNoiseStream = 1;
constexpr uint64_t kVocoderStreamBase = 2;

template <class T> void check_range(const char *name, T value, T lo, T hi, const char *range) {
    if (!(value >= lo && value <= hi)) throw InvalidArgument(concat(name, " is ", value, ", expected ", range));
}

// Rising raised-cosine weight of sample i of n (0 < w < 1).
float rising(size_t i, size_t n) {
    constexpr float kPi = 3.14159265358979f;
    return 0.5f - 0.5f * std::cos(kPi * (float(i) + 0.5f) / float(n));
}

// The prompt's last `keep` tokens (all for 0) with their mel frames: token i of the prompt owns
// frames ratio·i and ratio·i + 1, and a frame past ratio·Np (an odd prompt mel) stays at the end.
s3gen::FlowReference last_prompt_tokens(const s3gen::FlowReference &reference, size_t keep, size_t mel_bins,
                                        size_t ratio) {
    const size_t tokens = reference.prompt_tokens.size(), frames = reference.prompt_mel.size() / mel_bins;
    if (keep == 0 || keep >= tokens) return reference;
    const size_t first_frame = std::min(frames, ratio * (tokens - keep));
    s3gen::FlowReference trimmed;
    trimmed.prompt_tokens.assign(reference.prompt_tokens.end() - std::ptrdiff_t(keep), reference.prompt_tokens.end());
    trimmed.prompt_mel.assign(reference.prompt_mel.begin() + std::ptrdiff_t(first_frame * mel_bins),
                              reference.prompt_mel.end());
    trimmed.xvector = reference.xvector;
    return trimmed;
}

} // namespace

ChunkPlan ChunkPlan::offline() {
    ChunkPlan plan;
    plan.first_chunk_tokens = std::numeric_limits<int>::max() / 4;
    plan.chunk_tokens = plan.first_chunk_tokens;
    plan.prompt_tokens = 0;
    return plan;
}

void ChunkPlan::validate() const {
    check_range("first_chunk_tokens", first_chunk_tokens, 1, std::numeric_limits<int>::max(), ">= 1");
    check_range("chunk_tokens", chunk_tokens, 1, std::numeric_limits<int>::max(), ">= 1");
    // At least one: with an odd prompt mel the first frame of a chunk belongs to the token before it.
    check_range("left_context_tokens", left_context_tokens, 1, 200, "1 .. 200");
    check_range("mel_crossfade_frames", mel_crossfade_frames, 0, 6, "0 .. 6 (the flow's look-ahead frames)");
    check_range("hift_context_frames", hift_context_frames, 2, 64, "2 .. 64");
    check_range("wave_crossfade_frames", wave_crossfade_frames, 0, hift_context_frames, "0 .. hift_context_frames");
    check_range("prompt_tokens", prompt_tokens, 0, std::numeric_limits<int>::max(), ">= 0 (0: the whole prompt)");
}

uint64_t mix_seed(uint64_t seed, uint64_t stream) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void AudioSink::check_cancel() const {
    if (cancel_requested()) throw Cancelled("synthesis cancelled");
}

PieceVocalizer::PieceVocalizer(const VocodingStages &stages, AudioSink &sink, const s3gen::FlowReference &reference,
                               const ChunkPlan &plan, uint64_t seed, int piece, int pieces,
                               const FlowNoiseBuffer *fixed_noise)
    : stages_(stages), geometry_(stages.geometry), sink_(sink), plan_(plan),
      reference_(last_prompt_tokens(reference, size_t(plan.prompt_tokens), stages.geometry.mel_bins,
                                    stages.geometry.token_mel_ratio)),
      seed_(seed), piece_(piece), pieces_(pieces),
      noise_(fixed_noise ? fixed_flow_noise(*fixed_noise, stages.geometry.mel_bins)
                         : drawn_flow_noise(mix_seed(seed, kFlowNoiseStream), stages.geometry.mel_bins)) {
    const StageGeometry &g = geometry_;
    if (g.mel_bins == 0 || g.token_mel_ratio == 0 || g.samples_per_frame == 0 ||
        g.max_vocoder_frames <= size_t(plan.hift_context_frames))
        fail("streaming: stage geometry without mel bins, frames per token, samples per frame or room for the "
             "vocoder's context");
    prompt_frames_ = reference_.prompt_mel.size() / g.mel_bins;
    delta_ = int64_t(prompt_frames_) - int64_t(g.token_mel_ratio * reference_.prompt_tokens.size());
    // Tokens a window may hold besides the prompt; its contexts come out of the same budget.
    const int64_t room = int64_t(g.max_flow_tokens) - int64_t(reference_.prompt_tokens.size()) -
                         plan.left_context_tokens - int64_t(g.pre_lookahead);
    if (room < 1)
        fail("the voice prompt (", reference_.prompt_tokens.size(), " tokens) leaves no room for speech in the flow's ",
             g.max_flow_tokens, "-token window");
    max_chunk_ = size_t(room);
    // Noise for the whole prompt is drawn (then its tail kept), so the speech frames get the same
    // draws whatever part of the prompt the windows see.
    std::vector<float> prompt_noise = noise_->next(reference.prompt_mel.size() / g.mel_bins);
    prompt_noise_.assign(prompt_noise.end() - std::ptrdiff_t(reference_.prompt_mel.size()), prompt_noise.end());
}

void PieceVocalizer::add_token(int32_t token) {
    tokens_.push_back(token);
    const size_t end = flow_done_ + chunk_size();
    if (tokens_.size() >= end + geometry_.pre_lookahead) run_flow(flow_done_, end, false);
}

void PieceVocalizer::finish() {
    while (flow_done_ < tokens_.size()) {
        const size_t end = std::min(tokens_.size(), flow_done_ + chunk_size());
        run_flow(flow_done_, end, end == tokens_.size());
    }
}

size_t PieceVocalizer::chunk_size() const {
    const int planned = flow_done_ == 0 ? plan_.first_chunk_tokens : plan_.chunk_tokens;
    return std::min(size_t(planned), max_chunk_);
}

// First output frame of token t (the piece's last frame + 1 for t = N).
size_t PieceVocalizer::frame_of(size_t t) const {
    return t == 0 ? 0 : size_t(std::max<int64_t>(0, int64_t(geometry_.token_mel_ratio * t) - delta_));
}

// Flow over tokens [w0, w1) with its noise; the mel (mel_bins, frames) it generates.
s3gen::Mel PieceVocalizer::flow_window(size_t w0, size_t w1) {
    const size_t bins = geometry_.mel_bins, ratio = geometry_.token_mel_ratio;
    const size_t window_frames = ratio * (reference_.prompt_tokens.size() + w1 - w0);
    const size_t needed = ratio * w1;
    if (generated_noise_.size() < needed * bins) {
        const std::vector<float> more = noise_->next(needed - generated_noise_.size() / bins);
        generated_noise_.insert(generated_noise_.end(), more.begin(), more.end());
    }
    // Frame-major banks -> the (mel_bins, frames) channel-major noise of the window: every output
    // frame keeps one fixed draw, so overlapping windows see the same noise.
    std::vector<float> noise(bins * window_frames);
    for (size_t f = 0; f < window_frames; ++f) {
        const float *column =
            f < prompt_frames_ ? &prompt_noise_[f * bins] : &generated_noise_[(f - prompt_frames_ + ratio * w0) * bins];
        for (size_t c = 0; c < bins; ++c) noise[c * window_frames + f] = column[c];
    }
    const std::vector<int32_t> window(tokens_.begin() + std::ptrdiff_t(w0), tokens_.begin() + std::ptrdiff_t(w1));
    return stages_.flow.generate(window, reference_, std::move(noise));
}

// Makes the mel of tokens [t0, t1) final; `last`: t1 is the end of the piece.
void PieceVocalizer::run_flow(size_t t0, size_t t1, bool last) {
    sink_.check_cancel();
    const size_t bins = geometry_.mel_bins, ratio = geometry_.token_mel_ratio;
    const size_t w0 = t0 > size_t(plan_.left_context_tokens) ? t0 - size_t(plan_.left_context_tokens) : 0;
    const size_t w1 = last ? tokens_.size() : std::min(tokens_.size(), t1 + geometry_.pre_lookahead);
    sink_.progress("s3gen", fraction(t0));
    const s3gen::Mel mel = flow_window(w0, w1);
    const size_t begin = frame_of(t0);
    const size_t end = frame_of(t1);
    auto window_value = [&](size_t frame, size_t c) {
        return mel.values[c * size_t(mel.frames) + (frame - ratio * w0)];
    };
    const size_t blend = std::min(pending_mel_.size() / bins, end - begin);
    for (size_t f = begin; f < end; ++f)
        for (size_t c = 0; c < bins; ++c) {
            float v = window_value(f, c);
            if (f - begin < blend) {
                const float w = float(f - begin + 1) / float(blend + 1);
                v = w * v + (1 - w) * pending_mel_[(f - begin) * bins + c];
            }
            mel_.push_back(v);
        }
    pending_mel_.clear();
    const size_t available = ratio * w0 + size_t(mel.frames);
    for (size_t f = end; !last && f < std::min(available, end + size_t(plan_.mel_crossfade_frames)); ++f)
        for (size_t c = 0; c < bins; ++c) pending_mel_.push_back(window_value(f, c));
    flow_done_ = t1;
    run_vocoder(last);
}

// Vocodes the final mel as far as its right context allows (all of it when `last`).
void PieceVocalizer::run_vocoder(bool last) {
    const size_t bins = geometry_.mel_bins, per_frame = geometry_.samples_per_frame;
    const size_t frames = mel_.size() / bins;
    const size_t context = size_t(plan_.hift_context_frames);
    while (emitted_frames_ < frames) {
        const size_t h0 = emitted_frames_ > context ? emitted_frames_ - context : 0;
        size_t end = last ? frames : (frames > context ? frames - context : 0);
        end = std::min(end, h0 + geometry_.max_vocoder_frames - context);
        if (end <= emitted_frames_ || (emitted_frames_ == 0 && end < context && !last)) return;
        const size_t h1 = std::min(frames, end + context);
        sink_.check_cancel();
        sink_.progress("hift", fraction_of_frames(emitted_frames_, frames));

        std::vector<float> window(bins * (h1 - h0));
        for (size_t f = h0; f < h1; ++f)
            for (size_t c = 0; c < bins; ++c) window[c * (h1 - h0) + (f - h0)] = mel_[f * bins + c];
        const std::vector<float> wave =
            stages_.vocoder.synthesize(window, mix_seed(seed_, kVocoderStreamBase + vocoder_calls_++));

        std::vector<float> block(wave.begin() + std::ptrdiff_t((emitted_frames_ - h0) * per_frame),
                                 wave.begin() + std::ptrdiff_t((end - h0) * per_frame));
        const size_t fade = std::min(pending_wave_.size(), block.size());
        for (size_t i = 0; i < fade; ++i) {
            const float w = rising(i, fade);
            block[i] = w * block[i] + (1 - w) * pending_wave_[i];
        }
        pending_wave_.assign(
            wave.begin() + std::ptrdiff_t((end - h0) * per_frame),
            wave.begin() + std::ptrdiff_t((std::min(h1, end + size_t(plan_.wave_crossfade_frames)) - h0) * per_frame));
        emitted_frames_ = end;
        if (last && end == frames && tokens_.size() > 1)
            block.resize(block.size() - std::min(block.size(), geometry_.trim_final_samples));
        if (last && end == frames) fade_out(block);
        sink_.emit(block.data(), block.size());
    }
}

void PieceVocalizer::fade_out(std::vector<float> &block) const {
    const size_t n = std::min(block.size(), size_t(kPieceFadeOutSeconds * geometry_.sample_rate));
    for (size_t i = 0; i < n; ++i) block[block.size() - n + i] *= rising(n - 1 - i, n);
}

float PieceVocalizer::fraction(size_t tokens_done) const {
    const float within = tokens_.empty() ? 0.0f : float(tokens_done) / float(tokens_.size());
    return (float(piece_) + within) / float(pieces_);
}

float PieceVocalizer::fraction_of_frames(size_t done, size_t total) const {
    return (float(piece_) + (total ? float(done) / float(total) : 0.0f)) / float(pieces_);
}

} // namespace chatterbox
