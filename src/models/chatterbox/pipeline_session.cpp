#include "models/chatterbox/pipeline_session.h"

#include "audio/time_stretch.h"
#include "core/error.h"
#include "models/chatterbox/piece_synthesis.h"
#include "text/unicode.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace chatterbox {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

BackendOptions session_backend(const PipelineModel &engine, int threads) {
    // The engine's device, with this session's own backend instance and thread pool.
    if (threads < 0) throw InvalidArgument(concat("threads is ", threads, ", expected 0 (the engine's) or more"));
    BackendOptions options = engine.options().backend;
    if (threads > 0) options.threads = threads;
    return options;
}

// Watches a request's cancel flag for the duration of one call, and forgets it afterwards (the
// caller's flag may not outlive the call).
class CancelScope {
  public:
    CancelScope(CancelFlag &flag, const volatile int *external) : flag_(flag) {
        flag_.clear();
        flag_.watch(external);
    }
    ~CancelScope() { flag_.clear(); }
    CancelScope(const CancelScope &) = delete;
    CancelScope &operator=(const CancelScope &) = delete;

  private:
    CancelFlag &flag_;
};

// The whole text as one piece (SynthesisParams::split_text off), trimmed; punc_norm collapses the
// whitespace inside. Blank text gives no piece.
std::vector<text::TextPiece> whole_text(std::string_view text) {
    size_t begin = text.size(), end = 0;
    try {
        for (size_t at = 0; at < text.size();) {
            const text::CodePoint c = text::decode_utf8_at(text, at, "text");
            if (!text::is_python_space(c.value)) {
                begin = std::min(begin, at);
                end = at + c.size;
            }
            at += c.size;
        }
    } catch (const Error &error) { // invalid UTF-8
        throw InvalidArgument(error.what());
    }
    if (begin >= end) return {};
    return {text::TextPiece{std::string(text.substr(begin, end - begin)), text::Boundary::end}};
}

// The alignment analyzer needs the variant's aligned heads, inside this model's backbone.
void check_alignment_guard(const t3::HParams &hp, const t3::GuardOptions &guards) {
    if (!guards.alignment) return;
    if (hp.guards.aligned_heads.empty())
        throw InvalidArgument(concat("alignment_guard: the ", variant_name(hp.variant),
                                     " model has no alignment analyzer (no aligned attention heads)"));
    for (const t3::AttentionHead &h : hp.guards.aligned_heads)
        if (h.layer >= hp.n_layers || h.head >= hp.n_heads)
            throw InvalidArgument(concat("alignment_guard: this T3 has ", hp.n_layers, " layers x ", hp.n_heads,
                                         " heads, the analyzer watches head (", h.layer, ", ", h.head, ")"));
}

} // namespace

void SynthesisOptions::validate() const {
    chatterbox::validate(params);
    if (stream) chunks.validate();
}

// One request's output: the wave so far, timing, speed, streaming, progress and cancellation.
class PipelineSession::Request : public AudioSink {
  public:
    Request(const SynthesisOptions &options, const CancelFlag &cancel, int sample_rate)
        : options_(options), cancel_(cancel), start_(Clock::now()) {
        result_.sample_rate = sample_rate;
        // Speed 1 does not touch the stretcher at all: the audio stays bit for bit the model's.
        if (options.params.speed != 1.0f) stretch_.emplace(sample_rate, options.params.speed);
    }

    bool cancel_requested() const override { return cancel_.requested(); }

    void progress(const char *stage, float fraction) override {
        if (options_.on_progress) options_.on_progress(stage, std::clamp(fraction, 0.0f, 1.0f));
    }

    void emit(const float *samples, size_t n) override {
        if (!stretch_) return deliver(samples, n);
        const std::vector<float> stretched = stretch_->process(samples, n);
        deliver(stretched.data(), stretched.size());
    }
    void emit_silence(double seconds) {
        const std::vector<float> silence(size_t(std::lround(seconds * result_.sample_rate)), 0.0f);
        emit(silence.data(), silence.size());
    }

    SynthesisResult &result() { return result_; }
    SynthesisResult finish() {
        if (stretch_) {
            const std::vector<float> rest = stretch_->finish();
            deliver(rest.data(), rest.size());
        }
        result_.seconds_total = seconds_since(start_);
        result_.seconds_to_first_audio =
            audio_goes_out() ? first_audio_.value_or(result_.seconds_total) : result_.seconds_total;
        return std::move(result_);
    }

  private:
    // Whether the final audio goes to on_chunk as it is made (streaming, or not kept in the result).
    bool audio_goes_out() const { return options_.stream || !options_.keep_wave; }

    // Final audio: into the result, and to the chunk callback when streaming.
    void deliver(const float *samples, size_t n) {
        if (n == 0) return;
        if (!first_audio_) first_audio_ = seconds_since(start_);
        if (options_.keep_wave) result_.wave.insert(result_.wave.end(), samples, samples + n);
        if (audio_goes_out() && options_.on_chunk && !options_.on_chunk(samples, n))
            throw Cancelled("synthesis cancelled by the chunk callback");
    }

    const SynthesisOptions &options_;
    const CancelFlag &cancel_;
    Clock::time_point start_;
    std::optional<double> first_audio_;
    std::optional<audio::TimeStretch> stretch_;
    SynthesisResult result_;
};

class PipelineSession::FlowAdapter : public FlowStage {
  public:
    explicit FlowAdapter(s3gen::FlowSession &flow) : flow_(flow) {}
    s3gen::Mel generate(const std::vector<int32_t> &tokens, const s3gen::FlowReference &reference,
                        std::vector<float> noise) override {
        return flow_.generate(tokens, reference, std::move(noise));
    }

  private:
    s3gen::FlowSession &flow_;
};

class PipelineSession::VocoderAdapter : public VocoderStage {
  public:
    explicit VocoderAdapter(hift::VocoderSession &vocoder) : vocoder_(vocoder) {}
    std::vector<float> synthesize(const std::vector<float> &mel, uint64_t seed) override {
        return vocoder_.synthesize(mel, nullptr, seed);
    }

  private:
    hift::VocoderSession &vocoder_;
};

PipelineSession::PipelineSession(const PipelineModel &engine, const PipelineSessionOptions &options)
    : PipelineSession(engine, nullptr, options) {}

PipelineSession::PipelineSession(Runtime &runtime) : PipelineSession(runtime, runtime.session_options()) {}

PipelineSession::PipelineSession(Runtime &runtime, const PipelineSessionOptions &options)
    : PipelineSession(runtime.engine(), &runtime, options) {}

PipelineSession::PipelineSession(const PipelineModel &engine, Runtime *runtime, const PipelineSessionOptions &options)
    : engine_(engine), t3_prefixes_(runtime ? runtime->t3_prefixes() : nullptr),
      backend_(session_backend(engine, options.threads)) {
    backend_.set_cancel_flag(&cancel_);
    if (engine.has(Component::t3)) {
        t3_ = std::make_unique<t3::T3Session>(engine.t3(), backend_, options.t3);
        t3_executor_ = std::make_unique<t3::Executor>(*t3_, runtime ? runtime->t3_batch() : nullptr, &cancel_);
    }
    if (engine.has(Component::flow)) {
        flow_ = std::make_unique<s3gen::FlowSession>(engine.flow(), backend_, options.flow_attention,
                                                     runtime ? runtime->flow_batch() : nullptr, &cancel_);
        flow_stage_ = std::make_unique<FlowAdapter>(*flow_);
    }
    if (engine.has(Component::vocoder)) {
        vocoder_ = std::make_unique<hift::VocoderSession>(engine.vocoder(), backend_,
                                                          runtime ? runtime->vocoder_batch() : nullptr, &cancel_);
        vocoder_stage_ = std::make_unique<VocoderAdapter>(*vocoder_);
    }
}

PipelineSession::~PipelineSession() = default;

t3::T3Session &PipelineSession::t3() {
    engine_.t3(); // the engine's error when it has no T3
    return *t3_;
}

s3gen::FlowSession &PipelineSession::flow() {
    engine_.flow();
    return *flow_;
}

hift::VocoderSession &PipelineSession::vocoder() {
    engine_.vocoder();
    return *vocoder_;
}

VocodingStages PipelineSession::vocoding(const SynthesisParams &params) {
    const s3gen::FlowHParams &flow_hp = engine_.flow().hparams();
    flow_->set_cfm_steps(params.cfm_steps);
    const hift::HiftHParams &hift_hp = vocoder().hparams();
    StageGeometry geometry;
    geometry.mel_bins = size_t(flow_hp.mel_bins);
    geometry.token_mel_ratio = size_t(flow_hp.token_mel_ratio);
    geometry.pre_lookahead = size_t(flow_hp.pre_lookahead);
    geometry.max_flow_tokens = size_t(flow_hp.max_total_tokens);
    geometry.samples_per_frame = size_t(hift_hp.samples_per_frame());
    geometry.max_vocoder_frames = size_t(hift_hp.max_frames);
    geometry.sample_rate = hift_hp.sample_rate;
    if (flow_hp.trim_last_token) geometry.trim_final_samples = geometry.token_mel_ratio * geometry.samples_per_frame;
    return {geometry, *flow_stage_, *vocoder_stage_};
}

VoiceConditionals PipelineSession::voice_from_file(const std::string &path, const VoiceOptions &options,
                                                   VoiceTaps *taps) {
    return engine_.voice_builder().from_file(backend_, path, options, taps);
}

VoiceConditionals PipelineSession::voice_from_audio(const audio::AudioBuffer &audio, float exaggeration,
                                                    VoiceTaps *taps) {
    return engine_.voice_builder().from_audio(backend_, audio, exaggeration, taps);
}

std::vector<text::TextPiece> check_synthesis(const PipelineModel &engine, std::string_view text,
                                             const SynthesisOptions &options) {
    options.validate();
    const int limit = engine.t3().hparams().max_new_tokens_limit();
    if (options.params.sampling.max_new_tokens > limit)
        throw InvalidArgument(concat("max_new_tokens is ", options.params.sampling.max_new_tokens, ", expected 1 .. ",
                                     limit, " (the model's speech positions)"));
    check_alignment_guard(engine.t3().hparams(), options.params.sampling.guards);
    engine.text().check_language(options.params.language);
    std::vector<text::TextPiece> pieces =
        options.params.split_text ? engine.split_text(text, options.params.language) : whole_text(text);
    if (pieces.empty()) throw InvalidArgument("the text is empty (nothing to say)");
    if (!text::has_something_to_say(text)) throw InvalidArgument(text::kNothingToSay);
    return pieces;
}

SynthesisResult PipelineSession::synthesize(std::string_view text, const VoiceConditionals &voice,
                                            const SynthesisOptions &options) {
    const t3::T3Model &model = engine_.t3();
    const t3::HParams &hp = model.hparams();
    const TextFrontEnd &front_end = engine_.text();
    const std::vector<text::TextPiece> pieces = check_synthesis(engine_, text, options);
    check_voice_fits(voice, engine_.files().hparams().variant);
    const VocodingStages stages = vocoding(options.params);

    CancelScope cancel_scope(cancel_, options.cancel);
    Request request(options, cancel_, engine_.sample_rate());
    request.progress("t3", 0.0f);
    const t3::CondEmbeddings cond = t3::encode_conditioning(model, backend_, voice.t3);
    std::shared_ptr<const t3::KvPrefix> prefix;
    if (t3_prefixes_ && !options.params.sampling.guards.alignment) prefix = t3_prefixes_->get(*t3_, cond);
    PieceRequest piece;
    piece.cond = &cond;
    piece.prefix = prefix.get();
    piece.reference = &voice.s3gen;
    piece.plan = options.stream ? options.chunks : ChunkPlan::offline();
    piece.stream = options.stream;
    piece.flow_noise = options.flow_noise.values ? &options.flow_noise : nullptr;
    piece.trailing_tokens = s3gen::flow_input_tokens({}, engine_.flow().hparams());
    piece.count = int(pieces.size());
    for (piece.index = 0; piece.index < piece.count; ++piece.index) {
        request.check_cancel();
        const text::TextPiece &text_piece = pieces[size_t(piece.index)];
        piece.framed_text = front_end.t3_tokens(text_piece.text, options.params.language);
        if (int(piece.framed_text.size()) > hp.max_framed_text())
            throw InvalidArgument(concat("the text is ", piece.framed_text.size() - size_t(front_end.framing_tokens()),
                                         " tokens, more than T3 reads in one pass (",
                                         hp.max_framed_text() - front_end.framing_tokens(),
                                         "): let it be split into sentences"));
        piece.sampling = options.params.sampling;
        // The first piece uses the seed itself, so a one-sentence request is the plain seeded run;
        // later pieces draw their noise from seeds of their own and T3's tokens from the stream the
        // piece before left.
        if (piece.index > 0) piece.sampling.seed = mix_seed(piece.sampling.seed, uint64_t(piece.index) << 32);
        PieceResult spoken = synthesize_piece(*t3_executor_, stages, request, piece);
        piece.t3_generator = std::move(spoken.generated.generator);
        SynthesisResult &result = request.result();
        result.t3_steps += int(spoken.generated.tokens.size());
        result.eos_steps.push_back(spoken.generated.eos_step);
        result.piece_ends.push_back(spoken.generated.end);
        result.speech_tokens += spoken.speech_tokens;
        if (piece.index + 1 < piece.count)
            request.emit_silence(text_piece.after == text::Boundary::sentence ? options.params.sentence_pause
                                                                              : options.params.clause_pause);
    }
    request.result().pieces = piece.count;
    request.progress("done", 1.0f);
    return request.finish();
}

SynthesisResult PipelineSession::convert(const audio::AudioBuffer &source, const VoiceConditionals &target,
                                         const SynthesisOptions &options) {
    options.validate();
    check_voice_fits(target, engine_.files().hparams().variant);
    const VocodingStages stages = vocoding(options.params);
    CancelScope cancel_scope(cancel_, options.cancel);
    Request request(options, cancel_, engine_.sample_rate());
    request.progress("s3tokenizer", 0.0f);
    const std::vector<int32_t> tokens = engine_.voice_builder().speech_tokens(backend_, source);
    if (tokens.empty()) throw Error("the source recording gave no speech tokens (too short?)");
    request.check_cancel();
    PieceVocalizer vocalizer(stages, request, target.s3gen, options.stream ? options.chunks : ChunkPlan::offline(),
                             options.params.sampling.seed, 0, 1,
                             options.flow_noise.values ? &options.flow_noise : nullptr);
    for (int32_t token : tokens) vocalizer.add_token(token);
    vocalizer.finish();
    request.result().pieces = 1;
    request.result().speech_tokens = int(tokens.size());
    request.progress("done", 1.0f);
    return request.finish();
}

} // namespace chatterbox
