// The public C API (include/chatterbox/chatterbox.h) over PipelineModel and PipelineSession. Every entry point catches
// every exception: the status says what kind of failure it was, the thread-local message what
// exactly. Which status a plain Error gets depends on what the call was doing (loading a model,
// reading a recording ...); InvalidArgument and Cancelled from the pipeline keep their own.

#include "chatterbox/chatterbox.h"

#include "api/engine_params.h"
#include "audio/audio_file.h"
#include "core/error.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/voice.h"
#include "text/languages.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <string>

struct chatterbox_engine {
    std::unique_ptr<chatterbox::PipelineModel> engine;
    std::unique_ptr<chatterbox::Runtime> runtime; // the engine's sessions share its batches
    std::string description;
    std::mutex internal_mutex; // serialises the engine-level calls on `internal`
    std::unique_ptr<chatterbox::PipelineSession> internal;
};

struct chatterbox_session {
    std::unique_ptr<chatterbox::PipelineSession> session;
};

struct chatterbox_voice {
    chatterbox::VoiceConditionals voice;
};

namespace {

thread_local std::string last_error;

// An error whose status is already decided (a missing file is CHATTERBOX_ERROR_IO whatever the call).
class StatusError : public chatterbox::Error {
  public:
    StatusError(chatterbox_status status, const std::string &message) : Error(message), status(status) {}
    chatterbox_status status;
};

StatusError argument_error(const std::string &message) {
    return StatusError(CHATTERBOX_ERROR_INVALID_ARGUMENT, message);
}

chatterbox_status fail_with(chatterbox_status status, const std::string &message) {
    last_error = message;
    return status;
}

// Runs body; an exception becomes a status and the thread's message. `plain_error` is the status
// of an Error of no more specific kind.
template <class Body> chatterbox_status guarded(chatterbox_status plain_error, Body &&body) {
    try {
        body();
        return CHATTERBOX_OK;
    } catch (const StatusError &e) {
        return fail_with(e.status, e.what());
    } catch (const chatterbox::Cancelled &e) {
        return fail_with(CHATTERBOX_ERROR_CANCELLED, e.what());
    } catch (const chatterbox::InvalidArgument &e) {
        return fail_with(CHATTERBOX_ERROR_INVALID_ARGUMENT, e.what());
    } catch (const chatterbox::Error &e) {
        return fail_with(plain_error, e.what());
    } catch (const std::bad_alloc &) {
        return fail_with(CHATTERBOX_ERROR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception &e) {
        return fail_with(CHATTERBOX_ERROR_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return fail_with(CHATTERBOX_ERROR_INTERNAL, "internal error: unknown exception");
    }
}

// Runs one step of a call: a plain Error from it gets `status` (specific kinds pass through).
template <class Body> auto with_status(chatterbox_status status, Body &&body) -> decltype(body()) {
    try {
        return body();
    } catch (const StatusError &) {
        throw;
    } catch (const chatterbox::Cancelled &) {
        throw;
    } catch (const chatterbox::InvalidArgument &) {
        throw;
    } catch (const chatterbox::Error &e) {
        throw StatusError(status, e.what());
    }
}

template <class T> void require(const T *pointer, const char *function, const char *name) {
    if (!pointer) throw argument_error(chatterbox::concat(function, ": ", name, " is NULL"));
}

// A file the caller named must exist and be readable before the engine interprets it.
void require_readable_file(const char *path, const char *what) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec))
        throw StatusError(CHATTERBOX_ERROR_IO, chatterbox::concat(what, " '", path, "' does not exist"));
    if (fs::is_directory(path, ec))
        throw StatusError(CHATTERBOX_ERROR_IO, chatterbox::concat(what, " '", path, "' is a folder, not a file"));
    if (!std::ifstream(path, std::ios::binary))
        throw StatusError(CHATTERBOX_ERROR_IO, chatterbox::concat(what, " '", path, "' cannot be read"));
}

// Where each parameter of the engine's table lives in the C struct (the table itself is
// chatterbox::synthesis_parameters(); a parameter without a field here is an internal error).
struct CField {
    const char *name;
    float chatterbox_synthesis_params::*real;
    int chatterbox_synthesis_params::*integer; // whole numbers and flags
};
using P = chatterbox_synthesis_params;
constexpr CField kCFields[] = {
    {"exaggeration", &P::exaggeration, nullptr},
    {"cfg_weight", &P::cfg_weight, nullptr},
    {"temperature", &P::temperature, nullptr},
    {"repetition_penalty", &P::repetition_penalty, nullptr},
    {"min_p", &P::min_p, nullptr},
    {"top_p", &P::top_p, nullptr},
    {"top_k", nullptr, &P::top_k},
    {"max_new_tokens", nullptr, &P::max_new_tokens},
    {"sentence_pause", &P::sentence_pause, nullptr},
    {"clause_pause", &P::clause_pause, nullptr},
    {"split_text", nullptr, &P::split_text},
    {"ignore_eos", nullptr, &P::ignore_eos},
    {"speed", &P::speed, nullptr},
    {"cfm_steps", nullptr, &P::cfm_steps},
    {"length_bound", nullptr, &P::length_bound},
    {"speech_per_text_token", &P::speech_per_text_token, nullptr},
    {"stop_guards", nullptr, &P::stop_guards},
    {"alignment_guard", nullptr, &P::alignment_guard},
};

const CField &c_field(const chatterbox::SynthesisParameter &parameter) {
    for (const CField &field : kCFields)
        if (std::string(field.name) == parameter.name) return field;
    throw std::logic_error(chatterbox::concat("synthesis parameter ", parameter.name, " has no C field"));
}

double c_value(const chatterbox_synthesis_params &p, const CField &field) {
    return field.real ? double(p.*field.real) : double(p.*field.integer);
}

void set_c_value(chatterbox_synthesis_params &p, const CField &field, double value) {
    if (field.real)
        p.*field.real = float(value);
    else
        p.*field.integer = int(value);
}

chatterbox::SynthesisParams synthesis_params(const chatterbox_synthesis_params &p) {
    chatterbox::SynthesisParams params;
    for (const chatterbox::SynthesisParameter &parameter : chatterbox::synthesis_parameters()) {
        const double value = c_value(p, c_field(parameter));
        // Checked here, not after the conversion: a C int or float outside the C++ field's range must not wrap.
        parameter.check(value);
        parameter.set(params, value);
    }
    params.sampling.seed = p.seed;
    params.language = p.language ? p.language : "";
    return params;
}

chatterbox::SynthesisOptions synthesis_options(const chatterbox_synthesis_params &p) {
    chatterbox::SynthesisOptions o;
    o.params = synthesis_params(p);
    o.stream = p.stream != 0;
    o.keep_wave = p.discard_samples == 0;
    o.cancel = p.cancel;
    if (p.flow_noise) o.flow_noise = {p.flow_noise, CHATTERBOX_MEL_BINS, p.flow_noise_frames};
    if (p.on_chunk) {
        const chatterbox_chunk_callback callback = p.on_chunk;
        void *user = p.user_data;
        o.on_chunk = [callback, user](const float *samples, size_t n) { return callback(samples, n, user) == 0; };
    }
    if (p.on_progress) {
        const chatterbox_progress_callback callback = p.on_progress;
        void *user = p.user_data;
        o.on_progress = [callback, user](const char *stage, float fraction) { callback(stage, fraction, user); };
    }
    return o;
}

using chatterbox::t3::PieceEnd;
static_assert(int(PieceEnd::eos) == CHATTERBOX_PIECE_EOS && int(PieceEnd::max_tokens) == CHATTERBOX_PIECE_MAX_TOKENS &&
                  int(PieceEnd::length_bound) == CHATTERBOX_PIECE_LENGTH_BOUND &&
                  int(PieceEnd::token_repeat) == CHATTERBOX_PIECE_TOKEN_REPEAT &&
                  int(PieceEnd::silence_tail) == CHATTERBOX_PIECE_SILENCE_TAIL &&
                  int(PieceEnd::alignment) == CHATTERBOX_PIECE_ALIGNMENT &&
                  int(PieceEnd::stopped) == CHATTERBOX_PIECE_STOPPED,
              "t3::PieceEnd and chatterbox_piece_end must list the same ends in the same order");

// Hands a result to the caller's struct (malloc'd samples, freed by chatterbox_audio_free).
void fill_audio(const chatterbox::SynthesisResult &result, chatterbox_audio *audio) {
    float *samples = nullptr;
    if (!result.wave.empty()) {
        samples = static_cast<float *>(std::malloc(result.wave.size() * sizeof(float)));
        if (!samples) throw std::bad_alloc();
        std::copy(result.wave.begin(), result.wave.end(), samples);
    }
    audio->samples = samples;
    audio->n_samples = result.wave.size();
    audio->sample_rate = result.sample_rate;
    audio->seconds_to_first_audio = result.seconds_to_first_audio;
    audio->seconds_total = result.seconds_total;
    audio->speech_tokens = result.speech_tokens;
    audio->piece_ends = nullptr;
    audio->n_pieces = result.piece_ends.size();
    if (!result.piece_ends.empty()) {
        audio->piece_ends = static_cast<int *>(std::malloc(result.piece_ends.size() * sizeof(int)));
        if (!audio->piece_ends) {
            std::free(audio->samples);
            throw std::bad_alloc();
        }
        for (size_t i = 0; i < result.piece_ends.size(); ++i) audio->piece_ends[i] = int(result.piece_ends[i]);
    }
    audio->pieces_at_length_bound = result.pieces_at_length_bound();
}

void clear_audio(chatterbox_audio *audio) {
    if (audio) *audio = chatterbox_audio{nullptr, 0, 0, 0.0, 0.0, 0, nullptr, 0, 0};
}

// The voice models, bound on first use: a model without them is a model error.
void require_voice_models(const chatterbox::PipelineModel &engine) {
    with_status(CHATTERBOX_ERROR_MODEL, [&] { engine.voice_builder(); });
}

void check_exaggeration(float exaggeration) {
    chatterbox::find_synthesis_parameter("exaggeration")->check(exaggeration);
}

// A recording or a voice file, told apart by content; a recording is computed on session.
chatterbox::VoiceConditionals open_voice(chatterbox::PipelineSession &session, const char *path, float exaggeration) {
    check_exaggeration(exaggeration);
    require_readable_file(path, "voice");
    if (chatterbox::is_voice_file(path)) {
        chatterbox::VoiceConditionals loaded = chatterbox::load_voice(path);
        loaded.t3.exaggeration = exaggeration;
        return loaded;
    }
    require_voice_models(session.engine());
    return session.voice_from_file(path, exaggeration);
}

// A voice from a recording (not a voice file), computed on session.
chatterbox::VoiceConditionals voice_from_recording(chatterbox::PipelineSession &session, const char *path,
                                                   const chatterbox_voice_params *params) {
    const chatterbox_voice_params p = params ? *params : chatterbox_voice_default_params();
    check_exaggeration(p.exaggeration);
    if (p.norm_loudness != 0 && p.norm_loudness != 1)
        throw argument_error(chatterbox::concat("norm_loudness is ", p.norm_loudness, ", expected 0 or 1"));
    require_readable_file(path, "voice recording");
    require_voice_models(session.engine());
    return session.voice_from_file(path, chatterbox::VoiceOptions{p.exaggeration, p.norm_loudness == 1});
}

chatterbox::VoiceConditionals builtin_voice(const chatterbox::PipelineModel &engine, float exaggeration) {
    check_exaggeration(exaggeration);
    return with_status(CHATTERBOX_ERROR_MODEL, [&] { return engine.builtin_voice(exaggeration); });
}

void synthesize(chatterbox::PipelineSession &session, const char *text, const chatterbox_voice *voice,
                const chatterbox_synthesis_params *params, chatterbox_audio *audio) {
    require(text, "chatterbox_synthesize", "text");
    require(params, "chatterbox_synthesize", "params");
    require(audio, "chatterbox_synthesize", "audio");
    const chatterbox::SynthesisOptions options = synthesis_options(*params);
    const chatterbox::SynthesisResult result =
        voice ? session.synthesize(text, voice->voice, options)
              : session.synthesize(text, builtin_voice(session.engine(), params->exaggeration), options);
    fill_audio(result, audio);
}

void convert_voice(chatterbox::PipelineSession &session, const char *source_path, const chatterbox_voice *voice,
                   const chatterbox_synthesis_params *params, chatterbox_audio *audio) {
    require(source_path, "chatterbox_convert_voice", "source_path");
    require(params, "chatterbox_convert_voice", "params");
    require(audio, "chatterbox_convert_voice", "audio");
    require_readable_file(source_path, "source recording");
    const chatterbox::audio::AudioBuffer source =
        with_status(CHATTERBOX_ERROR_AUDIO, [&] { return chatterbox::audio::read_audio(source_path); });
    const chatterbox::SynthesisOptions options = synthesis_options(*params);
    const chatterbox::VoiceConditionals target =
        voice ? voice->voice : builtin_voice(session.engine(), params->exaggeration);
    require_voice_models(session.engine());
    // Failures past reading are about the recording's content (too short, silent ...).
    const chatterbox::SynthesisResult result =
        with_status(CHATTERBOX_ERROR_AUDIO, [&] { return session.convert(source, target, options); });
    fill_audio(result, audio);
}

// Runs body on the engine's internal session, one engine-level call at a time.
template <class Body> void on_internal_session(chatterbox_engine &engine, Body &&body) {
    const std::lock_guard<std::mutex> lock(engine.internal_mutex);
    body(*engine.internal);
}

} // namespace

extern "C" {

const char *chatterbox_last_error(void) { return last_error.c_str(); }

const char *chatterbox_status_name(chatterbox_status status) {
    switch (status) {
    case CHATTERBOX_OK:
        return "ok";
    case CHATTERBOX_ERROR_INVALID_ARGUMENT:
        return "invalid argument";
    case CHATTERBOX_ERROR_IO:
        return "i/o error";
    case CHATTERBOX_ERROR_MODEL:
        return "model error";
    case CHATTERBOX_ERROR_AUDIO:
        return "audio error";
    case CHATTERBOX_ERROR_CANCELLED:
        return "cancelled";
    case CHATTERBOX_ERROR_OUT_OF_MEMORY:
        return "out of memory";
    case CHATTERBOX_ERROR_INTERNAL:
        return "internal error";
    }
    return "unknown status";
}

const char *chatterbox_version(void) { return CHATTERBOX_VERSION; }

chatterbox_engine_params chatterbox_engine_default_params(void) {
    return {nullptr, nullptr, 0, 0, 0, nullptr, 0, 0, 0, nullptr};
}

size_t chatterbox_engine_setting_count(void) { return chatterbox::engine_settings_table().size(); }

const chatterbox_engine_setting_info *chatterbox_engine_setting(size_t index) {
    struct Info {
        chatterbox_engine_setting_info info;
        std::string default_value, accepted; // what info's pointers point at
    };
    static const std::vector<Info> infos = [] {
        std::vector<Info> out(chatterbox::engine_settings_table().size());
        for (size_t i = 0; i < out.size(); ++i) {
            const chatterbox::EngineSetting &s = chatterbox::engine_settings_table()[i];
            out[i].default_value = s.default_value();
            out[i].accepted = s.accepted_text();
            out[i].info = {s.name,
                           s.option,
                           s.meaning,
                           out[i].default_value.c_str(),
                           out[i].accepted.c_str(),
                           s.number != nullptr,
                           s.shared_services};
        }
        return out;
    }();
    return index < infos.size() ? &infos[index].info : nullptr;
}

chatterbox_status chatterbox_engine_params_set(chatterbox_engine_params *params, const char *name, const char *value) {
    return guarded(CHATTERBOX_ERROR_INVALID_ARGUMENT, [&] {
        require(params, "chatterbox_engine_params_set", "params");
        require(name, "chatterbox_engine_params_set", "name");
        require(value, "chatterbox_engine_params_set", "value");
        const chatterbox::EngineSetting *setting = chatterbox::find_engine_setting(name);
        if (!setting) throw argument_error(chatterbox::concat("no engine setting is named '", name, "'"));
        chatterbox::c_api::set_engine_param(*params, *setting, value);
    });
}

chatterbox_status chatterbox_engine_load(const chatterbox_engine_params *params, chatterbox_engine **engine) {
    if (engine) *engine = nullptr;
    return guarded(CHATTERBOX_ERROR_MODEL, [&] {
        require(params, "chatterbox_engine_load", "params");
        require(engine, "chatterbox_engine_load", "engine");
        require(params->model_path, "chatterbox_engine_load", "params->model_path");
        const chatterbox::EngineSettings settings = chatterbox::c_api::engine_settings(*params);
        const chatterbox::PipelineModelOptions options = settings.engine_options(); // checked before the weights load
        const chatterbox::RuntimeOptions runtime = settings.runtime_options();
        auto created = std::make_unique<chatterbox_engine>();
        created->engine = std::make_unique<chatterbox::PipelineModel>(options);
        created->runtime = std::make_unique<chatterbox::Runtime>(*created->engine, runtime);
        created->internal = std::make_unique<chatterbox::PipelineSession>(*created->runtime);
        created->description = created->engine->description();
        *engine = created.release();
    });
}

void chatterbox_engine_free(chatterbox_engine *engine) { delete engine; }

int chatterbox_engine_sample_rate(const chatterbox_engine *engine) {
    return engine ? engine->engine->sample_rate() : 0;
}

const char *chatterbox_engine_description(const chatterbox_engine *engine) {
    return engine ? engine->description.c_str() : "";
}

const char *chatterbox_engine_variant(const chatterbox_engine *engine) {
    return engine ? chatterbox::variant_name(engine->engine->files().hparams().variant) : "";
}

chatterbox_status chatterbox_voice_from_audio_file(chatterbox_engine *engine, const char *path, float exaggeration,
                                                   chatterbox_voice **voice) {
    chatterbox_voice_params params = chatterbox_voice_default_params();
    params.exaggeration = exaggeration;
    return chatterbox_voice_from_audio_file_ex(engine, path, &params, voice);
}

chatterbox_voice_params chatterbox_voice_default_params(void) {
    const chatterbox::VoiceOptions defaults;
    return {defaults.exaggeration, defaults.normalize_loudness ? 1 : 0};
}

chatterbox_status chatterbox_voice_from_audio_file_ex(chatterbox_engine *engine, const char *path,
                                                      const chatterbox_voice_params *params, chatterbox_voice **voice) {
    if (voice) *voice = nullptr;
    return guarded(CHATTERBOX_ERROR_AUDIO, [&] {
        require(engine, "chatterbox_voice_from_audio_file", "engine");
        require(path, "chatterbox_voice_from_audio_file", "path");
        require(voice, "chatterbox_voice_from_audio_file", "voice");
        on_internal_session(*engine, [&](chatterbox::PipelineSession &session) {
            *voice = new chatterbox_voice{voice_from_recording(session, path, params)};
        });
    });
}

chatterbox_status chatterbox_voice_builtin(chatterbox_engine *engine, float exaggeration, chatterbox_voice **voice) {
    if (voice) *voice = nullptr;
    return guarded(CHATTERBOX_ERROR_MODEL, [&] {
        require(engine, "chatterbox_voice_builtin", "engine");
        require(voice, "chatterbox_voice_builtin", "voice");
        *voice = new chatterbox_voice{builtin_voice(*engine->engine, exaggeration)};
    });
}

chatterbox_status chatterbox_voice_load(const char *path, chatterbox_voice **voice) {
    if (voice) *voice = nullptr;
    return guarded(CHATTERBOX_ERROR_IO, [&] {
        require(path, "chatterbox_voice_load", "path");
        require(voice, "chatterbox_voice_load", "voice");
        require_readable_file(path, "voice file");
        *voice = new chatterbox_voice{chatterbox::load_voice(path)};
    });
}

chatterbox_status chatterbox_voice_save(const chatterbox_voice *voice, const char *path) {
    return guarded(CHATTERBOX_ERROR_IO, [&] {
        require(voice, "chatterbox_voice_save", "voice");
        require(path, "chatterbox_voice_save", "path");
        chatterbox::save_voice(voice->voice, path);
    });
}

chatterbox_status chatterbox_voice_open(chatterbox_engine *engine, const char *path, float exaggeration,
                                        chatterbox_voice **voice) {
    if (voice) *voice = nullptr;
    return guarded(CHATTERBOX_ERROR_AUDIO, [&] {
        require(engine, "chatterbox_voice_open", "engine");
        require(path, "chatterbox_voice_open", "path");
        require(voice, "chatterbox_voice_open", "voice");
        on_internal_session(*engine, [&](chatterbox::PipelineSession &session) {
            *voice = new chatterbox_voice{open_voice(session, path, exaggeration)};
        });
    });
}

chatterbox_status chatterbox_voice_with_exaggeration(const chatterbox_voice *voice, float exaggeration,
                                                     chatterbox_voice **out) {
    if (out) *out = nullptr;
    return guarded(CHATTERBOX_ERROR_INTERNAL, [&] {
        require(voice, "chatterbox_voice_with_exaggeration", "voice");
        require(out, "chatterbox_voice_with_exaggeration", "out");
        check_exaggeration(exaggeration);
        auto copy = std::make_unique<chatterbox_voice>(*voice);
        copy->voice.t3.exaggeration = exaggeration;
        *out = copy.release();
    });
}

void chatterbox_voice_free(chatterbox_voice *voice) { delete voice; }

chatterbox_synthesis_params chatterbox_synthesis_default_params(void) {
    chatterbox_synthesis_params p{};
    const chatterbox::SynthesisParams defaults;
    for (const chatterbox::SynthesisParameter &parameter : chatterbox::synthesis_parameters())
        set_c_value(p, c_field(parameter), parameter.get(defaults));
    p.seed = defaults.sampling.seed;
    return p;
}

const char *chatterbox_piece_end_name(int end) {
    if (end < int(chatterbox::t3::PieceEnd::eos) || end > int(chatterbox::t3::PieceEnd::stopped)) return nullptr;
    return chatterbox::t3::piece_end_name(chatterbox::t3::PieceEnd(end));
}

size_t chatterbox_synthesis_param_count(void) { return chatterbox::synthesis_parameters().size(); }

size_t chatterbox_language_count(void) { return chatterbox::text::supported_languages().size(); }

const char *chatterbox_language_code(size_t index) {
    const auto &languages = chatterbox::text::supported_languages();
    return index < languages.size() ? languages[index].code : nullptr;
}

const char *chatterbox_language_name(size_t index) {
    const auto &languages = chatterbox::text::supported_languages();
    return index < languages.size() ? languages[index].name : nullptr;
}

const chatterbox_param_info *chatterbox_synthesis_param_info(size_t index) {
    static const std::vector<chatterbox_param_info> infos = [] {
        std::vector<chatterbox_param_info> out;
        for (const chatterbox::SynthesisParameter &p : chatterbox::synthesis_parameters())
            out.push_back({p.name, p.option, p.meaning, p.lo, p.hi, p.lo_excluded, p.integer, p.default_value(),
                           p.flag != nullptr});
        return out;
    }();
    return index < infos.size() ? &infos[index] : nullptr;
}

chatterbox_status chatterbox_synthesis_params_set(chatterbox_synthesis_params *params, const char *name, double value) {
    return guarded(CHATTERBOX_ERROR_INVALID_ARGUMENT, [&] {
        require(params, "chatterbox_synthesis_params_set", "params");
        require(name, "chatterbox_synthesis_params_set", "name");
        const chatterbox::SynthesisParameter *parameter = chatterbox::find_synthesis_parameter(name);
        if (!parameter) throw argument_error(chatterbox::concat("no synthesis parameter is named '", name, "'"));
        parameter->check(value);
        set_c_value(*params, c_field(*parameter), value);
    });
}

chatterbox_status chatterbox_synthesis_params_validate(const chatterbox_synthesis_params *params) {
    return guarded(CHATTERBOX_ERROR_INVALID_ARGUMENT, [&] {
        require(params, "chatterbox_synthesis_params_validate", "params");
        synthesis_params(*params);
    });
}

chatterbox_status chatterbox_synthesize(chatterbox_engine *engine, const char *text, const chatterbox_voice *voice,
                                        const chatterbox_synthesis_params *params, chatterbox_audio *audio) {
    clear_audio(audio);
    return guarded(CHATTERBOX_ERROR_INTERNAL, [&] {
        require(engine, "chatterbox_synthesize", "engine");
        on_internal_session(
            *engine, [&](chatterbox::PipelineSession &session) { synthesize(session, text, voice, params, audio); });
    });
}

chatterbox_status chatterbox_convert_voice(chatterbox_engine *engine, const char *source_path,
                                           const chatterbox_voice *voice, const chatterbox_synthesis_params *params,
                                           chatterbox_audio *audio) {
    clear_audio(audio);
    return guarded(CHATTERBOX_ERROR_INTERNAL, [&] {
        require(engine, "chatterbox_convert_voice", "engine");
        on_internal_session(*engine, [&](chatterbox::PipelineSession &session) {
            convert_voice(session, source_path, voice, params, audio);
        });
    });
}

void chatterbox_audio_free(chatterbox_audio *audio) {
    if (!audio) return;
    std::free(audio->samples);
    std::free(audio->piece_ends);
    clear_audio(audio);
}

chatterbox_status chatterbox_session_new(chatterbox_engine *engine, int threads, chatterbox_session **session) {
    if (session) *session = nullptr;
    return guarded(CHATTERBOX_ERROR_INTERNAL, [&] {
        require(engine, "chatterbox_session_new", "engine");
        require(session, "chatterbox_session_new", "session");
        if (threads < 0)
            throw argument_error(chatterbox::concat("threads is ", threads, ", expected 0 (the engine's) or more"));
        chatterbox::PipelineSessionOptions options = engine->runtime->session_options();
        options.threads = threads;
        *session = new chatterbox_session{std::make_unique<chatterbox::PipelineSession>(*engine->runtime, options)};
    });
}

void chatterbox_session_free(chatterbox_session *session) { delete session; }

chatterbox_status chatterbox_session_synthesize(chatterbox_session *session, const char *text,
                                                const chatterbox_voice *voice,
                                                const chatterbox_synthesis_params *params, chatterbox_audio *audio) {
    clear_audio(audio);
    return guarded(CHATTERBOX_ERROR_INTERNAL, [&] {
        require(session, "chatterbox_session_synthesize", "session");
        synthesize(*session->session, text, voice, params, audio);
    });
}

chatterbox_status chatterbox_session_convert_voice(chatterbox_session *session, const char *source_path,
                                                   const chatterbox_voice *voice,
                                                   const chatterbox_synthesis_params *params, chatterbox_audio *audio) {
    clear_audio(audio);
    return guarded(CHATTERBOX_ERROR_INTERNAL, [&] {
        require(session, "chatterbox_session_convert_voice", "session");
        convert_voice(*session->session, source_path, voice, params, audio);
    });
}

chatterbox_status chatterbox_session_voice_open(chatterbox_session *session, const char *path, float exaggeration,
                                                chatterbox_voice **voice) {
    if (voice) *voice = nullptr;
    return guarded(CHATTERBOX_ERROR_AUDIO, [&] {
        require(session, "chatterbox_session_voice_open", "session");
        require(path, "chatterbox_session_voice_open", "path");
        require(voice, "chatterbox_session_voice_open", "voice");
        *voice = new chatterbox_voice{open_voice(*session->session, path, exaggeration)};
    });
}

chatterbox_status chatterbox_session_voice_from_audio_file(chatterbox_session *session, const char *path,
                                                           const chatterbox_voice_params *params,
                                                           chatterbox_voice **voice) {
    if (voice) *voice = nullptr;
    return guarded(CHATTERBOX_ERROR_AUDIO, [&] {
        require(session, "chatterbox_session_voice_from_audio_file", "session");
        require(path, "chatterbox_session_voice_from_audio_file", "path");
        require(voice, "chatterbox_session_voice_from_audio_file", "voice");
        *voice = new chatterbox_voice{voice_from_recording(*session->session, path, params)};
    });
}

void chatterbox_session_cancel(chatterbox_session *session) {
    if (session) session->session->cancel();
}

} // extern "C"
