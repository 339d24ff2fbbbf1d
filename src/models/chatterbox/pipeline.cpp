#include "models/chatterbox/pipeline.h"

#include "models/chatterbox/hift/vocoder.h"
#include "models/chatterbox/s3gen/flow.h"
#include "models/chatterbox/s3gen/flow_cfm.h"
#include "models/chatterbox/t3/generate.h"
#include "models/chatterbox/t3/model.h"
#include "models/chatterbox/t3/session.h"
#include "text/bpe_tokenizer.h"
#include "text/punc_norm.h"
#include "text/sentence_splitter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

namespace chatterbox {

namespace {

using Clock = std::chrono::steady_clock;

// Text tokens of one T3 pass. Speech runs at roughly one text token per 1.5 speech tokens, so this
// keeps a piece's speech (about 20 s) well inside the default 1000-token pass; the official model
// was trained on sentences, and users report degraded output beyond ~300 characters.
constexpr size_t kTextTokenBudget = 300;

// A piece's tail is faded out over this long so the pause after it starts without a click.
constexpr double kPieceFadeOutSeconds = 0.01;

// splitmix64: derives independent seeds for the pieces and the random draws of one request.
uint64_t mix_seed(uint64_t seed, uint64_t stream) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

constexpr uint64_t kFlowNoiseStream = 1;
constexpr uint64_t kHiftStreamBase = 2;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

template <class T> void check_range(const char *name, T value, T lo, T hi, const char *range) {
    if (!(value >= lo && value <= hi)) throw InvalidArgument(concat(name, " is ", value, ", expected ", range));
}

// Rising raised-cosine weight of sample i of n (0 < w < 1).
float rising(size_t i, size_t n) {
    constexpr float kPi = 3.14159265358979f;
    return 0.5f - 0.5f * std::cos(kPi * (float(i) + 0.5f) / float(n));
}

} // namespace

ChunkPlan ChunkPlan::offline() {
    ChunkPlan plan;
    plan.first_chunk_tokens = std::numeric_limits<int>::max() / 4;
    plan.chunk_tokens = plan.first_chunk_tokens;
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
}

void SynthesisOptions::validate(int max_new_tokens_limit) const {
    check_range("cfg_weight", cfg_weight, 0.0f, 10.0f, "0 .. 10");
    check_range("temperature", temperature, 1e-3f, 10.0f, "0.001 .. 10");
    check_range("repetition_penalty", repetition_penalty, 1e-3f, 10.0f, "0.001 .. 10");
    check_range("min_p", min_p, 0.0f, 1.0f, "0 .. 1");
    check_range("top_p", top_p, 1e-6f, 1.0f, "(0, 1]");
    check_range("max_new_tokens", max_new_tokens, 1, max_new_tokens_limit, "1 .. the model's speech positions");
    check_range("sentence_pause_seconds", sentence_pause_seconds, 0.0f, 10.0f, "0 .. 10");
    check_range("clause_pause_seconds", clause_pause_seconds, 0.0f, 10.0f, "0 .. 10");
    if (stream) chunks.validate();
}

namespace {

// One request's output: the wave so far, timing, streaming, progress and cancellation.
class Request {
  public:
    explicit Request(const SynthesisOptions &options) : options_(options), start_(Clock::now()) {}

    void check_cancel() const {
        if (options_.cancel && *options_.cancel) throw Cancelled("synthesis cancelled");
    }
    bool cancel_requested() const { return options_.cancel && *options_.cancel; }

    void progress(const char *stage, float fraction) const {
        if (options_.on_progress) options_.on_progress(stage, std::clamp(fraction, 0.0f, 1.0f));
    }

    void emit(const float *samples, size_t n) {
        if (n == 0) return;
        if (!first_audio_) first_audio_ = seconds_since(start_);
        result_.wave.insert(result_.wave.end(), samples, samples + n);
        if (options_.stream && options_.on_chunk && !options_.on_chunk(samples, n))
            throw Cancelled("synthesis cancelled by the chunk callback");
    }
    void emit_silence(double seconds) {
        const std::vector<float> silence(size_t(std::lround(seconds * result_.sample_rate)), 0.0f);
        emit(silence.data(), silence.size());
    }

    SynthesisResult &result() { return result_; }
    SynthesisResult finish() {
        result_.seconds_total = seconds_since(start_);
        result_.seconds_to_first_audio = first_audio_.value_or(result_.seconds_total);
        if (!options_.stream) result_.seconds_to_first_audio = result_.seconds_total;
        return std::move(result_);
    }

  private:
    const SynthesisOptions &options_;
    Clock::time_point start_;
    std::optional<double> first_audio_;
    SynthesisResult result_;
};

// Speech tokens of one piece -> audio, window by window (see ChunkPlan). Tokens arrive with
// add_token (while T3 generates, when streaming) and finish() flushes the rest.
//
// Frame bookkeeping: with a prompt of F mel frames and Np tokens (F is 2 Np or 2 Np + 1), the
// output mel of the whole piece has 2 N − δ frames, δ = F − 2 Np, and token t starts at output
// frame 2 t − δ. A flow window over tokens [w0, w1) yields output frames starting at 2 w0.
// The two stages after T3, as one request uses them.
struct Vocoding {
    const s3gen::FlowHParams &flow_hp;
    s3gen::FlowSession &flow;
    hift::Vocoder &vocoder;
};

class PieceVocalizer {
  public:
    PieceVocalizer(const Vocoding &stages, Request &request, const s3gen::FlowReference &reference,
                   const ChunkPlan &plan, uint64_t seed, int piece, int pieces)
        : stages_(stages), request_(request), reference_(reference), plan_(plan), seed_(seed), piece_(piece),
          pieces_(pieces), mel_bins_(size_t(stages.flow_hp.mel_bins)),
          samples_per_frame_(size_t(stages.vocoder.hparams().samples_per_frame())),
          noise_rng_(mix_seed(seed, kFlowNoiseStream)) {
        const s3gen::FlowHParams &hp = stages.flow_hp;
        prompt_frames_ = reference.prompt_mel.size() / mel_bins_;
        delta_ = int64_t(prompt_frames_) - 2 * int64_t(reference.prompt_tokens.size());
        right_context_ = hp.pre_lookahead;
        // Tokens a window may hold besides the prompt; its contexts come out of the same budget.
        const int64_t room =
            hp.max_total_tokens - int64_t(reference.prompt_tokens.size()) - plan.left_context_tokens - right_context_;
        if (room < 1)
            fail("the voice prompt (", reference.prompt_tokens.size(),
                 " tokens) leaves no room for speech in the flow's ", hp.max_total_tokens, "-token window");
        max_chunk_ = size_t(room);
        prompt_noise_ = s3gen::standard_normal(prompt_frames_ * mel_bins_, noise_rng_);
    }

    // One valid speech token (< 6561); runs the flow and HiFT when a chunk is complete.
    void add_token(int32_t token) {
        tokens_.push_back(token);
        const size_t end = flow_done_ + chunk_size();
        if (tokens_.size() >= end + size_t(right_context_)) run_flow(flow_done_, end, false);
    }

    void finish() {
        while (flow_done_ < tokens_.size()) {
            const size_t end = std::min(tokens_.size(), flow_done_ + chunk_size());
            run_flow(flow_done_, end, end == tokens_.size());
        }
    }

    size_t tokens() const { return tokens_.size(); }

  private:
    size_t chunk_size() const {
        const int planned = flow_done_ == 0 ? plan_.first_chunk_tokens : plan_.chunk_tokens;
        return std::min(size_t(planned), max_chunk_);
    }

    // First output frame of token t (the piece's last frame + 1 for t = N).
    size_t frame_of(size_t t) const { return t == 0 ? 0 : size_t(std::max<int64_t>(0, 2 * int64_t(t) - delta_)); }

    // Flow over tokens [w0, w1) with its noise; the mel (80, frames) it generates.
    s3gen::Mel flow_window(size_t w0, size_t w1) {
        const size_t window_frames = 2 * (reference_.prompt_tokens.size() + w1 - w0);
        const size_t needed = 2 * w1;
        if (generated_noise_.size() < needed * mel_bins_) {
            const std::vector<float> more =
                s3gen::standard_normal(needed * mel_bins_ - generated_noise_.size(), noise_rng_);
            generated_noise_.insert(generated_noise_.end(), more.begin(), more.end());
        }
        // Frame-major banks -> the (80, frames) channel-major noise of the window.
        std::vector<float> noise(mel_bins_ * window_frames);
        for (size_t f = 0; f < window_frames; ++f) {
            const float *column = f < prompt_frames_ ? &prompt_noise_[f * mel_bins_]
                                                     : &generated_noise_[(f - prompt_frames_ + 2 * w0) * mel_bins_];
            for (size_t c = 0; c < mel_bins_; ++c) noise[c * window_frames + f] = column[c];
        }
        const std::vector<int32_t> window(tokens_.begin() + std::ptrdiff_t(w0), tokens_.begin() + std::ptrdiff_t(w1));
        return stages_.flow.generate(window, reference_, std::move(noise));
    }

    // Makes the mel of tokens [t0, t1) final; `last`: t1 is the end of the piece.
    void run_flow(size_t t0, size_t t1, bool last) {
        request_.check_cancel();
        const size_t w0 = t0 > size_t(plan_.left_context_tokens) ? t0 - size_t(plan_.left_context_tokens) : 0;
        const size_t w1 = last ? tokens_.size() : std::min(tokens_.size(), t1 + size_t(right_context_));
        request_.progress("s3gen", fraction(t0));
        const s3gen::Mel mel = flow_window(w0, w1);
        const size_t begin = frame_of(t0);
        const size_t end = frame_of(t1);
        auto window_value = [&](size_t frame, size_t c) {
            return mel.values[c * size_t(mel.frames) + (frame - 2 * w0)];
        };
        const size_t blend = std::min(pending_mel_.size() / mel_bins_, end - begin);
        for (size_t f = begin; f < end; ++f)
            for (size_t c = 0; c < mel_bins_; ++c) {
                float v = window_value(f, c);
                if (f - begin < blend) {
                    const float w = float(f - begin + 1) / float(blend + 1);
                    v = w * v + (1 - w) * pending_mel_[(f - begin) * mel_bins_ + c];
                }
                mel_.push_back(v);
            }
        pending_mel_.clear();
        const size_t available = 2 * w0 + size_t(mel.frames);
        for (size_t f = end; !last && f < std::min(available, end + size_t(plan_.mel_crossfade_frames)); ++f)
            for (size_t c = 0; c < mel_bins_; ++c) pending_mel_.push_back(window_value(f, c));
        flow_done_ = t1;
        run_hift(last);
    }

    // Vocodes the final mel as far as its right context allows (all of it when `last`).
    void run_hift(bool last) {
        const size_t frames = mel_.size() / mel_bins_;
        const size_t context = size_t(plan_.hift_context_frames);
        const size_t max_frames = size_t(stages_.vocoder.hparams().max_frames);
        while (emitted_frames_ < frames) {
            const size_t h0 = emitted_frames_ > context ? emitted_frames_ - context : 0;
            size_t end = last ? frames : (frames > context ? frames - context : 0);
            end = std::min(end, h0 + max_frames - context);
            if (end <= emitted_frames_ || (emitted_frames_ == 0 && end < context && !last)) return;
            const size_t h1 = std::min(frames, end + context);
            request_.check_cancel();
            request_.progress("hift", fraction_of_frames(emitted_frames_, frames));

            std::vector<float> window(mel_bins_ * (h1 - h0));
            for (size_t f = h0; f < h1; ++f)
                for (size_t c = 0; c < mel_bins_; ++c) window[c * (h1 - h0) + (f - h0)] = mel_[f * mel_bins_ + c];
            const std::vector<float> wave =
                stages_.vocoder.synthesize(window, nullptr, mix_seed(seed_, kHiftStreamBase + hift_calls_++));

            std::vector<float> block(wave.begin() + std::ptrdiff_t((emitted_frames_ - h0) * samples_per_frame_),
                                     wave.begin() + std::ptrdiff_t((end - h0) * samples_per_frame_));
            const size_t fade = std::min(pending_wave_.size(), block.size());
            for (size_t i = 0; i < fade; ++i) {
                const float w = rising(i, fade);
                block[i] = w * block[i] + (1 - w) * pending_wave_[i];
            }
            pending_wave_.assign(wave.begin() + std::ptrdiff_t((end - h0) * samples_per_frame_),
                                 wave.begin() +
                                     std::ptrdiff_t((std::min(h1, end + size_t(plan_.wave_crossfade_frames)) - h0) *
                                                    samples_per_frame_));
            emitted_frames_ = end;
            const bool piece_done = last && end == frames;
            if (piece_done) fade_out(block);
            request_.emit(block.data(), block.size());
        }
    }

    void fade_out(std::vector<float> &block) const {
        const size_t n = std::min(block.size(), size_t(kPieceFadeOutSeconds * stages_.vocoder.hparams().sample_rate));
        for (size_t i = 0; i < n; ++i) block[block.size() - n + i] *= rising(n - 1 - i, n);
    }

    float fraction(size_t tokens_done) const {
        const float within = tokens_.empty() ? 0.0f : float(tokens_done) / float(tokens_.size());
        return (float(piece_) + within) / float(pieces_);
    }
    float fraction_of_frames(size_t done, size_t total) const {
        return (float(piece_) + (total ? float(done) / float(total) : 0.0f)) / float(pieces_);
    }

    const Vocoding stages_;
    Request &request_;
    const s3gen::FlowReference &reference_;
    const ChunkPlan plan_;
    const uint64_t seed_;
    const int piece_, pieces_;
    const size_t mel_bins_, samples_per_frame_;
    std::mt19937_64 noise_rng_;
    size_t prompt_frames_ = 0;
    int64_t delta_ = 0;
    int right_context_ = 0;
    size_t max_chunk_ = 0;

    std::vector<int32_t> tokens_;
    std::vector<float> prompt_noise_, generated_noise_; // frame-major (frames, 80)
    size_t flow_done_ = 0;                              // tokens whose mel is final
    std::vector<float> mel_;                            // final mel, frame-major
    std::vector<float> pending_mel_;  // the last window's frames after the final ones, for the cross-fade
    size_t emitted_frames_ = 0;       // mel frames whose samples were emitted
    std::vector<float> pending_wave_; // the last HiFT window's samples after the emitted ones
    uint64_t hift_calls_ = 0;
};

} // namespace

struct Pipeline::Impl {
    PipelineOptions options;
    ModelFiles files;
    text::EnTokenizer tokenizer;
    Backend backend;
    t3::Model t3;
    t3::Session t3_session;
    s3gen::FlowModel flow;
    s3gen::FlowSession flow_session;
    hift::Vocoder vocoder;
    std::unique_ptr<VoiceBuilder> voice_builder;

    explicit Impl(const PipelineOptions &o)
        : options(o), files(open_model(o.model_path)),
          tokenizer(text::BpeTokenizer::from_json(files.tokenizer_json(), files.path() + " tokenizer")),
          backend(o.backend), t3(files.weights(), backend, files.hparams().t3), t3_session(t3),
          flow(files.weights(), backend, files.hparams().flow), flow_session(flow),
          vocoder(files.weights(), backend, files.hparams().hift) {}

    static ModelFiles open_model(const std::string &path) {
        ModelFiles files = ModelFiles::open(path);
        for (const char *needed : {"t3", "s3gen"})
            if (!files.has_component(needed))
                fail(path, ": the model has no ", needed, " component (a GGUF converted with --components?)");
        if (!files.has_tokenizer()) fail(path, ": the model has no tokenizer (tokenizer.json)");
        return files;
    }

    Vocoding vocoding() { return {flow.hparams(), flow_session, vocoder}; }

    // Sentences, cut to the T3 text budget (measured in text tokens).
    std::vector<text::TextPiece> split(std::string_view text) const {
        text::SplitOptions options;
        options.max_length = std::min<size_t>(kTextTokenBudget, size_t(t3.hparams().max_framed_text() - 2));
        options.measure = [this](std::string_view piece) { return tokenizer.text_to_tokens(piece).size(); };
        return text::split_text(text, options);
    }
};

Pipeline::Pipeline(const PipelineOptions &options) : impl_(std::make_unique<Impl>(options)) {}
Pipeline::~Pipeline() = default;

const ModelFiles &Pipeline::files() const { return impl_->files; }
int Pipeline::sample_rate() const { return impl_->vocoder.hparams().sample_rate; }

std::string Pipeline::description() const {
    return concat(impl_->files.hparams().variant, " model, ", ggml_type_name(impl_->t3.matmul_type()), " weights, ",
                  impl_->backend.description());
}

const VoiceBuilder &Pipeline::voice_builder() {
    if (!impl_->voice_builder) impl_->voice_builder = std::make_unique<VoiceBuilder>(impl_->files, impl_->backend);
    return *impl_->voice_builder;
}

Voice Pipeline::builtin_voice(float exaggeration) const {
    Voice voice = chatterbox::builtin_voice(impl_->files);
    voice.t3.exaggeration = exaggeration;
    return voice;
}

std::vector<std::string> Pipeline::text_pieces(std::string_view text) const {
    std::vector<std::string> pieces;
    for (text::TextPiece &p : impl_->split(text)) pieces.push_back(std::move(p.text));
    return pieces;
}

SynthesisResult Pipeline::synthesize(std::string_view text, const Voice &voice, const SynthesisOptions &options) {
    Impl &e = *impl_;
    const t3::HParams &hp = e.t3.hparams();
    options.validate(hp.max_new_tokens_limit());
    std::vector<text::TextPiece> pieces;
    try {
        pieces = e.split(text);
    } catch (const Error &error) { // invalid UTF-8
        throw InvalidArgument(error.what());
    }
    if (pieces.empty()) throw InvalidArgument("the text is empty (nothing to say)");

    Request request(options);
    request.progress("t3", 0.0f);
    const t3::CondEmbeddings cond = t3::encode_conditioning(e.t3, voice.t3);
    const ChunkPlan plan = options.stream ? options.chunks : ChunkPlan::offline();
    const int n = int(pieces.size());
    for (int i = 0; i < n; ++i) {
        request.check_cancel();
        const std::vector<int32_t> framed =
            text::t3_text_tokens(e.tokenizer.text_to_tokens(text::punc_norm(pieces[size_t(i)].text)),
                                 hp.start_text_token, hp.stop_text_token);
        t3::SamplingParams sampling;
        sampling.temperature = options.temperature;
        sampling.top_p = options.top_p;
        sampling.min_p = options.min_p;
        sampling.repetition_penalty = options.repetition_penalty;
        sampling.cfg_weight = options.cfg_weight;
        sampling.max_new_tokens = options.max_new_tokens;
        // The first piece uses the seed itself, so a one-sentence request is the plain seeded run.
        sampling.seed = i == 0 ? options.seed : mix_seed(options.seed, uint64_t(i) << 32);

        PieceVocalizer vocalizer(e.vocoding(), request, voice.s3gen, plan, sampling.seed, i, n);
        t3::GenerationHooks hooks;
        bool speech_ended = false;
        hooks.on_step = [&](const t3::StepRecord &step) {
            request.progress("t3", (float(i) + float(step.step + 1) / float(options.max_new_tokens)) / float(n));
            // Streaming feeds the span drop_invalid_tokens keeps as it grows: speech units up to EOS.
            if (options.stream && !speech_ended) {
                if (step.token == hp.stop_speech_token)
                    speech_ended = true;
                else if (step.token < hp.speech_token_limit)
                    vocalizer.add_token(step.token);
            }
            return !request.cancel_requested();
        };
        const t3::GenerationResult generated = t3::generate(e.t3_session, cond, framed, sampling, hooks);
        request.check_cancel();
        if (!options.stream)
            for (int32_t token : t3::drop_invalid_tokens(generated.tokens, hp)) vocalizer.add_token(token);
        vocalizer.finish();
        request.result().speech_tokens += int(vocalizer.tokens());
        if (i + 1 < n)
            request.emit_silence(pieces[size_t(i)].after == text::Boundary::sentence ? options.sentence_pause_seconds
                                                                                     : options.clause_pause_seconds);
    }
    request.result().pieces = n;
    request.progress("done", 1.0f);
    return request.finish();
}

SynthesisResult Pipeline::convert(const audio::Audio &source, const Voice &target, const SynthesisOptions &options) {
    options.validate(impl_->t3.hparams().max_new_tokens_limit());
    Request request(options);
    request.progress("s3tokenizer", 0.0f);
    const std::vector<int32_t> tokens = voice_builder().speech_tokens(source);
    if (tokens.empty()) throw Error("the source recording gave no speech tokens (too short?)");
    request.check_cancel();
    PieceVocalizer vocalizer(impl_->vocoding(), request, target.s3gen,
                             options.stream ? options.chunks : ChunkPlan::offline(), options.seed, 0, 1);
    for (int32_t token : tokens) vocalizer.add_token(token);
    vocalizer.finish();
    request.result().pieces = 1;
    request.result().speech_tokens = int(tokens.size());
    request.progress("done", 1.0f);
    return request.finish();
}

} // namespace chatterbox
