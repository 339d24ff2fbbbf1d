#ifndef CHATTERBOX_CHATTERBOX_HPP
#define CHATTERBOX_CHATTERBOX_HPP
// Chatterbox Engine — a thin header-only C++17 layer over the C API (chatterbox.h).
//
// RAII handles, and exceptions for errors: every failing call throws chatterbox::api::Exception,
// which carries the C status and message. Callbacks are std::function; an exception thrown by one
// stops the synthesis and is rethrown from the call that ran it.
//
//   chatterbox::api::Engine engine("models/chatterbox");            // official folder or .gguf
//   chatterbox::api::Voice voice = engine.open_voice("ref.wav");    // or engine.builtin_voice()
//   chatterbox::api::Options options;
//   options.params.seed = 42;
//   options.on_chunk = [](const float *samples, size_t n) { play(samples, n); return true; };
//   options.params.stream = 1;
//   chatterbox::api::Audio audio = engine.synthesize("Hello there.", &voice, options);
//
// The namespace is chatterbox::api so that this header can live beside the engine's internal one.

#include "chatterbox/chatterbox.h"

#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace chatterbox::api {

class Exception : public std::runtime_error {
  public:
    Exception(chatterbox_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
    chatterbox_status status() const { return status_; }

  private:
    chatterbox_status status_;
};

inline void check(chatterbox_status status) {
    if (status != CHATTERBOX_OK) throw Exception(status, chatterbox_last_error());
}

struct Audio {
    std::vector<float> samples; // mono in [-1, 1]
    int sample_rate = 0;
    double seconds_to_first_audio = 0;
    double seconds_total = 0;
    int speech_tokens = 0;
    std::vector<int> piece_ends; // per text piece, a chatterbox_piece_end
    int pieces_at_length_bound = 0;
};

struct Options {
    // Numbers, flags (stream, split_text, ignore_eos) and the cancel flag; its C callback fields are
    // replaced by the two below.
    chatterbox_synthesis_params params = chatterbox_synthesis_default_params();
    std::function<bool(const float *samples, size_t n)> on_chunk; // return false to cancel
    std::function<void(const char *stage, float fraction)> on_progress;
};

class Voice {
  public:
    explicit Voice(chatterbox_voice *handle) : handle_(handle) {}
    static Voice load(const std::string &path) {
        chatterbox_voice *v = nullptr;
        check(chatterbox_voice_load(path.c_str(), &v));
        return Voice(v);
    }
    void save(const std::string &path) const { check(chatterbox_voice_save(handle_.get(), path.c_str())); }
    Voice with_exaggeration(float exaggeration) const {
        chatterbox_voice *v = nullptr;
        check(chatterbox_voice_with_exaggeration(handle_.get(), exaggeration, &v));
        return Voice(v);
    }
    const chatterbox_voice *get() const { return handle_.get(); }

  private:
    struct Free {
        void operator()(chatterbox_voice *v) const { chatterbox_voice_free(v); }
    };
    std::unique_ptr<chatterbox_voice, Free> handle_;
};

namespace detail {

// The callbacks' state during one call; an exception from a callback is kept and rethrown.
struct Callbacks {
    const Options *options;
    std::exception_ptr error;

    static int chunk(const float *samples, size_t n, void *user) {
        auto *self = static_cast<Callbacks *>(user);
        try {
            return self->options->on_chunk(samples, n) ? 0 : 1;
        } catch (...) {
            self->error = std::current_exception();
            return 1;
        }
    }
    static void progress(const char *stage, float fraction, void *user) {
        auto *self = static_cast<Callbacks *>(user);
        if (self->error) return;
        try {
            self->options->on_progress(stage, fraction);
        } catch (...) {
            self->error = std::current_exception();
        }
    }
};

template <class Call> inline Audio run(const Options &options, Call &&call) {
    Callbacks callbacks{&options, nullptr};
    chatterbox_synthesis_params p = options.params;
    p.on_chunk = options.on_chunk ? &Callbacks::chunk : nullptr;
    p.on_progress = options.on_progress ? &Callbacks::progress : nullptr;
    p.user_data = &callbacks;
    chatterbox_audio out{};
    const chatterbox_status status = call(p, &out);
    const std::unique_ptr<chatterbox_audio, void (*)(chatterbox_audio *)> owned(&out, chatterbox_audio_free);
    if (callbacks.error) std::rethrow_exception(callbacks.error);
    check(status);
    Audio audio;
    audio.samples.assign(out.samples, out.samples + out.n_samples);
    audio.sample_rate = out.sample_rate;
    audio.seconds_to_first_audio = out.seconds_to_first_audio;
    audio.seconds_total = out.seconds_total;
    audio.speech_tokens = out.speech_tokens;
    audio.piece_ends.assign(out.piece_ends, out.piece_ends + out.n_pieces);
    audio.pieces_at_length_bound = out.pieces_at_length_bound;
    return audio;
}

} // namespace detail

// chatterbox_engine_params by name, with the strings it points at kept: every setting of the engine's
// table (chatterbox_engine_setting), checked as it is set.
//   chatterbox::api::EngineParams params("models/chatterbox");
//   params.set("batch", "8").set("kv_cache", "q8_0");
class EngineParams {
  public:
    explicit EngineParams(const std::string &model_path) { set("model", model_path); }
    EngineParams(const EngineParams &other) : params_(other.params_), texts_(other.texts_) { point_at_texts(); }
    EngineParams &operator=(const EngineParams &other) {
        params_ = other.params_;
        texts_ = other.texts_;
        point_at_texts();
        return *this;
    }

    // Throws Exception (CHATTERBOX_ERROR_INVALID_ARGUMENT) for an unknown name or a value the setting refuses.
    EngineParams &set(const std::string &name, const std::string &value) {
        chatterbox_engine_params checked = params_;
        check(chatterbox_engine_params_set(&checked, name.c_str(), value.c_str()));
        params_ = checked;
        if (is_text(name)) {
            texts_[name] = value; // the map's nodes stay put while the struct points at them
            point_at_texts();
        }
        return *this;
    }
    const chatterbox_engine_params &get() const { return params_; }

  private:
    static bool is_text(const std::string &name) {
        for (size_t i = 0; const chatterbox_engine_setting_info *info = chatterbox_engine_setting(i); ++i)
            if (name == info->name) return !info->is_number;
        return false;
    }
    void point_at_texts() {
        for (const auto &[name, value] : texts_)
            check(chatterbox_engine_params_set(&params_, name.c_str(), value.c_str()));
    }

    chatterbox_engine_params params_ = chatterbox_engine_default_params();
    std::map<std::string, std::string> texts_;
};

class Engine {
  public:
    explicit Engine(const EngineParams &params) {
        chatterbox_engine *e = nullptr;
        check(chatterbox_engine_load(&params.get(), &e));
        handle_.reset(e);
    }
    // The common case: model, backend, threads, and t3_model (chatterbox_engine_params.t3_model, "" the default).
    explicit Engine(const std::string &model_path, const std::string &backend = "auto", int threads = 0,
                    const std::string &t3_model = "")
        : Engine(EngineParams(model_path)
                     .set("backend", backend)
                     .set("threads", std::to_string(threads))
                     .set("t3_model", t3_model)) {}

    int sample_rate() const { return chatterbox_engine_sample_rate(handle_.get()); }
    std::string description() const { return chatterbox_engine_description(handle_.get()); }
    chatterbox_engine *get() const { return handle_.get(); }

    Voice builtin_voice(float exaggeration = 0.5f) {
        chatterbox_voice *v = nullptr;
        check(chatterbox_voice_builtin(handle_.get(), exaggeration, &v));
        return Voice(v);
    }
    Voice voice_from_audio_file(const std::string &path, float exaggeration = 0.5f) {
        chatterbox_voice *v = nullptr;
        check(chatterbox_voice_from_audio_file(handle_.get(), path.c_str(), exaggeration, &v));
        return Voice(v);
    }
    // A recording or a saved voice file.
    Voice open_voice(const std::string &path, float exaggeration = 0.5f) {
        chatterbox_voice *v = nullptr;
        check(chatterbox_voice_open(handle_.get(), path.c_str(), exaggeration, &v));
        return Voice(v);
    }

    // voice nullptr: the built-in voice.
    Audio synthesize(const std::string &text, const Voice *voice = nullptr, const Options &options = {}) {
        return detail::run(options, [&](const chatterbox_synthesis_params &p, chatterbox_audio *out) {
            return chatterbox_synthesize(handle_.get(), text.c_str(), voice ? voice->get() : nullptr, &p, out);
        });
    }
    Audio convert_voice(const std::string &source_path, const Voice *target = nullptr, const Options &options = {}) {
        return detail::run(options, [&](const chatterbox_synthesis_params &p, chatterbox_audio *out) {
            return chatterbox_convert_voice(handle_.get(), source_path.c_str(), target ? target->get() : nullptr, &p,
                                            out);
        });
    }

  private:
    struct Free {
        void operator()(chatterbox_engine *e) const { chatterbox_engine_free(e); }
    };
    std::unique_ptr<chatterbox_engine, Free> handle_;
};

// One request stream on an engine (which must outlive it); sessions run at the same time on
// different threads. cancel() may be called from any thread.
class Session {
  public:
    explicit Session(Engine &engine, int threads = 0) {
        chatterbox_session *s = nullptr;
        check(chatterbox_session_new(engine.get(), threads, &s));
        handle_.reset(s);
    }

    Audio synthesize(const std::string &text, const Voice *voice = nullptr, const Options &options = {}) {
        return detail::run(options, [&](const chatterbox_synthesis_params &p, chatterbox_audio *out) {
            return chatterbox_session_synthesize(handle_.get(), text.c_str(), voice ? voice->get() : nullptr, &p, out);
        });
    }
    Audio convert_voice(const std::string &source_path, const Voice *target = nullptr, const Options &options = {}) {
        return detail::run(options, [&](const chatterbox_synthesis_params &p, chatterbox_audio *out) {
            return chatterbox_session_convert_voice(handle_.get(), source_path.c_str(),
                                                    target ? target->get() : nullptr, &p, out);
        });
    }
    // A recording or a saved voice file, computed on this session.
    Voice open_voice(const std::string &path, float exaggeration = 0.5f) {
        chatterbox_voice *v = nullptr;
        check(chatterbox_session_voice_open(handle_.get(), path.c_str(), exaggeration, &v));
        return Voice(v);
    }
    void cancel() { chatterbox_session_cancel(handle_.get()); }

  private:
    struct Free {
        void operator()(chatterbox_session *s) const { chatterbox_session_free(s); }
    };
    std::unique_ptr<chatterbox_session, Free> handle_;
};

} // namespace chatterbox::api

#endif // CHATTERBOX_CHATTERBOX_HPP
