// The public C API (include/chatterbox/chatterbox.h) over the Pipeline. Every entry point catches
// every exception: the status says what kind of failure it was, the thread-local message what
// exactly. Which status a plain Error gets depends on what the call was doing (loading a model,
// reading a recording ...); InvalidArgument and Cancelled from the pipeline keep their own.

#include "chatterbox/chatterbox.h"

#include "audio/audio_file.h"
#include "core/error.h"
#include "models/chatterbox/pipeline.h"
#include "models/chatterbox/voice.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <string>

struct chatterbox_engine {
    std::unique_ptr<chatterbox::Pipeline> pipeline;
    std::string description;
};

struct chatterbox_voice {
    chatterbox::Voice voice;
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

std::string backend_device(const char *backend) {
    const std::string name = backend ? backend : "auto";
    if (name != "auto" && name != "cpu" && name != "cuda" && name != "gpu")
        throw argument_error(chatterbox::concat("unknown backend '", name, "', expected auto, cpu, cuda or gpu"));
    if (name != "auto") return name;
    return chatterbox::Backend::available_devices().find("cuda") != std::string::npos ? "cuda" : "cpu";
}

chatterbox::SynthesisOptions synthesis_options(const chatterbox_synthesis_params &p) {
    chatterbox::SynthesisOptions o;
    o.cfg_weight = p.cfg_weight;
    o.temperature = p.temperature;
    o.repetition_penalty = p.repetition_penalty;
    o.min_p = p.min_p;
    o.top_p = p.top_p;
    o.seed = p.seed;
    o.max_new_tokens = p.max_new_tokens;
    o.stream = p.stream != 0;
    o.cancel = p.cancel;
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
}

void clear_audio(chatterbox_audio *audio) {
    if (audio) *audio = chatterbox_audio{nullptr, 0, 0, 0.0, 0.0, 0};
}

// The voice models, bound on first use: a model without them is a model error.
const chatterbox::VoiceBuilder &voice_builder(chatterbox_engine &engine) {
    return with_status(CHATTERBOX_ERROR_MODEL,
                       [&]() -> const chatterbox::VoiceBuilder & { return engine.pipeline->voice_builder(); });
}

void check_exaggeration(float exaggeration) {
    if (!(exaggeration >= 0.0f && exaggeration <= 10.0f))
        throw argument_error(chatterbox::concat("exaggeration is ", exaggeration, ", expected 0 .. 10"));
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

chatterbox_engine_params chatterbox_engine_default_params(void) { return {nullptr, nullptr, 0}; }

chatterbox_status chatterbox_engine_load(const chatterbox_engine_params *params, chatterbox_engine **engine) {
    if (engine) *engine = nullptr;
    return guarded(CHATTERBOX_ERROR_MODEL, [&] {
        require(params, "chatterbox_engine_load", "params");
        require(engine, "chatterbox_engine_load", "engine");
        require(params->model_path, "chatterbox_engine_load", "params->model_path");
        if (params->threads < 0)
            throw argument_error(chatterbox::concat("threads is ", params->threads, ", expected 0 (all) or more"));
        chatterbox::PipelineOptions options;
        options.model_path = params->model_path;
        options.backend.device = backend_device(params->backend);
        options.backend.threads = params->threads;
        auto created = std::make_unique<chatterbox_engine>();
        created->pipeline = std::make_unique<chatterbox::Pipeline>(options);
        created->description = created->pipeline->description();
        *engine = created.release();
    });
}

void chatterbox_engine_free(chatterbox_engine *engine) { delete engine; }

int chatterbox_engine_sample_rate(const chatterbox_engine *engine) {
    return engine ? engine->pipeline->sample_rate() : 0;
}

const char *chatterbox_engine_description(const chatterbox_engine *engine) {
    return engine ? engine->description.c_str() : "";
}

chatterbox_status chatterbox_voice_from_audio_file(chatterbox_engine *engine, const char *path, float exaggeration,
                                                   chatterbox_voice **voice) {
    if (voice) *voice = nullptr;
    return guarded(CHATTERBOX_ERROR_AUDIO, [&] {
        require(engine, "chatterbox_voice_from_audio_file", "engine");
        require(path, "chatterbox_voice_from_audio_file", "path");
        require(voice, "chatterbox_voice_from_audio_file", "voice");
        check_exaggeration(exaggeration);
        require_readable_file(path, "voice recording");
        *voice = new chatterbox_voice{voice_builder(*engine).from_file(path, exaggeration)};
    });
}

chatterbox_status chatterbox_voice_builtin(chatterbox_engine *engine, float exaggeration, chatterbox_voice **voice) {
    if (voice) *voice = nullptr;
    return guarded(CHATTERBOX_ERROR_MODEL, [&] {
        require(engine, "chatterbox_voice_builtin", "engine");
        require(voice, "chatterbox_voice_builtin", "voice");
        check_exaggeration(exaggeration);
        *voice = new chatterbox_voice{engine->pipeline->builtin_voice(exaggeration)};
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
        check_exaggeration(exaggeration);
        require_readable_file(path, "voice");
        if (chatterbox::is_voice_file(path)) {
            chatterbox::Voice loaded = chatterbox::load_voice(path);
            loaded.t3.exaggeration = exaggeration;
            *voice = new chatterbox_voice{std::move(loaded)};
        } else {
            *voice = new chatterbox_voice{voice_builder(*engine).from_file(path, exaggeration)};
        }
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
    p.exaggeration = 0.5f;
    p.cfg_weight = 0.5f;
    p.temperature = 0.8f;
    p.repetition_penalty = 1.2f;
    p.min_p = 0.05f;
    p.top_p = 1.0f;
    p.seed = 0;
    p.max_new_tokens = 1000;
    return p;
}

chatterbox_status chatterbox_synthesize(chatterbox_engine *engine, const char *text, const chatterbox_voice *voice,
                                        const chatterbox_synthesis_params *params, chatterbox_audio *audio) {
    clear_audio(audio);
    return guarded(CHATTERBOX_ERROR_INTERNAL, [&] {
        require(engine, "chatterbox_synthesize", "engine");
        require(text, "chatterbox_synthesize", "text");
        require(params, "chatterbox_synthesize", "params");
        require(audio, "chatterbox_synthesize", "audio");
        const chatterbox::SynthesisOptions options = synthesis_options(*params);
        chatterbox::Pipeline &pipeline = *engine->pipeline;
        chatterbox::SynthesisResult result;
        if (voice) {
            result = pipeline.synthesize(text, voice->voice, options);
        } else {
            check_exaggeration(params->exaggeration);
            const chatterbox::Voice builtin =
                with_status(CHATTERBOX_ERROR_MODEL, [&] { return pipeline.builtin_voice(params->exaggeration); });
            result = pipeline.synthesize(text, builtin, options);
        }
        fill_audio(result, audio);
    });
}

chatterbox_status chatterbox_convert_voice(chatterbox_engine *engine, const char *source_path,
                                           const chatterbox_voice *voice, const chatterbox_synthesis_params *params,
                                           chatterbox_audio *audio) {
    clear_audio(audio);
    return guarded(CHATTERBOX_ERROR_INTERNAL, [&] {
        require(engine, "chatterbox_convert_voice", "engine");
        require(source_path, "chatterbox_convert_voice", "source_path");
        require(params, "chatterbox_convert_voice", "params");
        require(audio, "chatterbox_convert_voice", "audio");
        require_readable_file(source_path, "source recording");
        chatterbox::Pipeline &pipeline = *engine->pipeline;
        const chatterbox::audio::Audio source =
            with_status(CHATTERBOX_ERROR_AUDIO, [&] { return chatterbox::audio::read_audio(source_path); });
        const chatterbox::SynthesisOptions options = synthesis_options(*params);
        const chatterbox::Voice *target = voice ? &voice->voice : nullptr;
        chatterbox::Voice builtin;
        if (!target) {
            check_exaggeration(params->exaggeration);
            builtin = with_status(CHATTERBOX_ERROR_MODEL, [&] { return pipeline.builtin_voice(params->exaggeration); });
            target = &builtin;
        }
        // Failures past reading are about the recording's content (too short, silent ...).
        const chatterbox::SynthesisResult result =
            with_status(CHATTERBOX_ERROR_AUDIO, [&] { return pipeline.convert(source, *target, options); });
        fill_audio(result, audio);
    });
}

void chatterbox_audio_free(chatterbox_audio *audio) {
    if (!audio) return;
    std::free(audio->samples);
    clear_audio(audio);
}

} // extern "C"
