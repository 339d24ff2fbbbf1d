// _chatterbox_engine: the extension module of the Python package chatterbox_engine (python/), a thin
// pybind11 layer over the public C API (include/chatterbox/chatterbox.h) plus the tools library's
// model download. The package's Python modules give it the official chatterbox classes.
//
// Every synthesis (a Job) runs on its session's worker thread while the calling thread waits with the
// GIL released; it wakes for each streamed chunk, for the end, and every kSignalPoll to let Python
// handle signals: a KeyboardInterrupt there sets the job's cancel flag, waits for the engine to stop
// (within one step) and propagates. C API failures become the Python exceptions a user expects.

#include "chatterbox/chatterbox.h"
#include "core/backend.h"
#include "models/chatterbox/model_download.h"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

// How often a waiting thread lets Python run its signal handlers (Ctrl-C answers within this plus one engine step).
constexpr std::chrono::milliseconds kSignalPoll{100};

// Raised for CHATTERBOX_ERROR_CANCELLED when the cancellation did not come from a signal (Job.cancel).
PyObject *cancelled_error = nullptr;

// A failed C API call as the Python exception a user expects; `message` is chatterbox_last_error() of
// the thread that made the call.
[[noreturn]] void raise_status(chatterbox_status status, const std::string &message) {
    switch (status) {
    case CHATTERBOX_ERROR_INVALID_ARGUMENT:
        throw py::value_error(message);
    case CHATTERBOX_ERROR_IO:
        PyErr_SetString(PyExc_OSError, message.c_str());
        throw py::error_already_set();
    case CHATTERBOX_ERROR_OUT_OF_MEMORY:
        PyErr_SetString(PyExc_MemoryError, message.c_str());
        throw py::error_already_set();
    case CHATTERBOX_ERROR_CANCELLED:
        PyErr_SetString(cancelled_error, message.c_str());
        throw py::error_already_set();
    default: // model, audio, internal
        throw std::runtime_error(message);
    }
}

void check(chatterbox_status status) {
    if (status != CHATTERBOX_OK) raise_status(status, chatterbox_last_error());
}

// Runs a C API call without the GIL; its failure raised with the message of the thread that made it.
template <class Call> void call_released(Call &&call) {
    chatterbox_status status;
    std::string message;
    {
        py::gil_scoped_release release;
        status = call();
        if (status != CHATTERBOX_OK) message = chatterbox_last_error();
    }
    if (status != CHATTERBOX_OK) raise_status(status, message);
}

// Samples the C API allocated, handed to NumPy without a copy (freed with the array).
py::array_t<float> take_samples(chatterbox_audio &audio) {
    float *samples = audio.samples;
    const size_t n = audio.n_samples;
    audio.samples = nullptr;
    chatterbox_audio_free(&audio);
    if (!samples) return py::array_t<float>(0);
    py::capsule owner(samples, [](void *pointer) { std::free(pointer); });
    return py::array_t<float>(py::ssize_t(n), samples, owner);
}

class Engine {
  public:
    Engine(const std::string &model_path, const std::string &backend, int threads, int batch,
           const std::optional<std::string> &t3_model) {
        chatterbox_engine_params params = chatterbox_engine_default_params();
        params.model_path = model_path.c_str();
        params.backend = backend.c_str();
        params.threads = threads;
        params.batch = batch;
        if (t3_model) params.t3_model = t3_model->c_str();
        call_released([&] { return chatterbox_engine_load(&params, &engine_); });
    }
    ~Engine() { chatterbox_engine_free(engine_); }
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    chatterbox_engine *get() const { return engine_; }
    int sample_rate() const { return chatterbox_engine_sample_rate(engine_); }
    std::string variant() const { return chatterbox_engine_variant(engine_); }
    std::string description() const { return chatterbox_engine_description(engine_); }

  private:
    chatterbox_engine *engine_ = nullptr;
};

class Voice {
  public:
    explicit Voice(chatterbox_voice *voice) : voice_(voice) {}
    ~Voice() { chatterbox_voice_free(voice_); }
    Voice(const Voice &) = delete;
    Voice &operator=(const Voice &) = delete;

    const chatterbox_voice *get() const { return voice_; }

    static std::unique_ptr<Voice> load(const std::string &path) {
        chatterbox_voice *voice = nullptr;
        call_released([&] { return chatterbox_voice_load(path.c_str(), &voice); });
        return std::make_unique<Voice>(voice);
    }
    static std::unique_ptr<Voice> builtin(const Engine &engine, float exaggeration) {
        chatterbox_voice *voice = nullptr;
        call_released([&] { return chatterbox_voice_builtin(engine.get(), exaggeration, &voice); });
        return std::make_unique<Voice>(voice);
    }
    void save(const std::string &path) const {
        call_released([&] { return chatterbox_voice_save(voice_, path.c_str()); });
    }
    std::unique_ptr<Voice> with_exaggeration(float exaggeration) const {
        chatterbox_voice *voice = nullptr;
        check(chatterbox_voice_with_exaggeration(voice_, exaggeration, &voice));
        return std::make_unique<Voice>(voice);
    }

  private:
    chatterbox_voice *voice_ = nullptr;
};

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// The synthesis parameters of one call: the engine's defaults, then each (name, value) through the
// one parameter table (chatterbox_synthesis_params_set checks the range and names the parameter).
struct Request {
    chatterbox_synthesis_params params = chatterbox_synthesis_default_params();
    // params.language and params.flow_noise are set to these by the Job that owns the copy it runs.
    std::string language;
    std::vector<float> flow_noise; // (CHATTERBOX_MEL_BINS, params.flow_noise_frames) or empty

    Request(const std::vector<std::pair<std::string, double>> &values, std::optional<uint64_t> seed,
            const std::optional<std::string> &language_code, const std::optional<FloatArray> &noise)
        : language(language_code.value_or("")) {
        for (const auto &[name, value] : values) check(chatterbox_synthesis_params_set(&params, name.c_str(), value));
        if (seed) params.seed = *seed;
        if (noise) take_flow_noise(*noise);
    }

  private:
    void take_flow_noise(const FloatArray &noise) {
        const py::ssize_t bins = CHATTERBOX_MEL_BINS;
        const bool channels_first = (noise.ndim() == 2 && noise.shape(0) == bins) ||
                                    (noise.ndim() == 3 && noise.shape(0) == 1 && noise.shape(1) == bins);
        if (!channels_first || noise.shape(noise.ndim() - 1) < 1) {
            std::string shape;
            for (py::ssize_t i = 0; i < noise.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(noise.shape(i));
            throw py::value_error("flow_noise must have the shape (80, frames) or (1, 80, frames), got (" + shape +
                                  ")");
        }
        flow_noise.assign(noise.data(), noise.data() + noise.size());
        params.flow_noise_frames = size_t(noise.shape(noise.ndim() - 1));
    }
};

// The thread that makes the C API calls of one session, one at a time: the same thread from call to
// call, because a call computes on its calling thread too (thread 0 of each graph), whose kernels keep
// per-thread scratch (oneDNN contexts, attention buffers) that a fresh thread would rebuild every call.
class Worker {
  public:
    Worker() : thread_([this] { loop(); }) {}
    ~Worker() {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    Worker(const Worker &) = delete;
    Worker &operator=(const Worker &) = delete;

    // Runs task on the thread (the caller makes sure the previous task has ended).
    void run(std::function<void()> task) {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            task_ = std::move(task);
        }
        wake_.notify_all();
    }

  private:
    void loop() {
        for (;;) {
            std::function<void()> task;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [this] { return stopping_ || task_; });
                if (!task_) return;
                task = std::move(task_);
                task_ = nullptr;
            }
            task();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::function<void()> task_;
    bool stopping_ = false;
    std::thread thread_; // last: it starts once the rest is ready
};

// One C API call on a session, run on the session's Worker; the Python thread waits in result() or
// next_chunk(), interruptible by signals.
class Job {
  public:
    using Call = std::function<chatterbox_status(const chatterbox_synthesis_params &, chatterbox_audio *)>;

    // How the audio reaches Python: whole (result), or in chunks (next_chunk) that are each text piece and
    // pause as it is done (the samples result would hold), or, low latency, the engine's streaming: vocoded
    // while T3 generates, the first chunk after a few dozen tokens (the same tokens, other samples: chunks
    // cross-faded, a trailing silence kept).
    enum class Delivery { whole, pieces, low_latency };

    Job(Worker &worker, Request request, Delivery delivery, Call call) : request_(std::move(request)) {
        request_.params.cancel = &cancel_;
        request_.params.language = request_.language.c_str();
        if (!request_.flow_noise.empty()) request_.params.flow_noise = request_.flow_noise.data();
        if (delivery != Delivery::whole) {
            request_.params.stream = delivery == Delivery::low_latency ? 1 : 0;
            request_.params.discard_samples = 1; // the chunks are the result
            request_.params.on_chunk = &Job::on_chunk;
            request_.params.user_data = this;
        }
        worker.run([this, call = std::move(call)] {
            const chatterbox_status status = call(request_.params, &audio_);
            const std::lock_guard<std::mutex> lock(mutex_);
            status_ = status;
            if (status != CHATTERBOX_OK) error_ = chatterbox_last_error();
            done_ = true;
            changed_.notify_all();
        });
    }
    ~Job() {
        stop();
        chatterbox_audio_free(&audio_);
    }
    Job(const Job &) = delete;
    Job &operator=(const Job &) = delete;

    // Stops the call soon (CHATTERBOX_ERROR_CANCELLED); from any thread.
    void cancel() { __atomic_store_n(&cancel_, 1, __ATOMIC_RELAXED); }

    // Cancels the call and waits until it has stopped (its session is then free again); raises nothing.
    void stop() {
        cancel();
        wait_for_end();
    }

    // The whole audio once the call ends.
    py::array_t<float> result() {
        wait_until([this] { return done_; });
        finish();
        return take_samples(audio_);
    }

    // The next streamed chunk, or None after the last one.
    py::object next_chunk() {
        wait_until([this] { return done_ || !chunks_.empty(); });
        std::vector<float> chunk;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (!chunks_.empty()) {
                chunk = std::move(chunks_.front());
                chunks_.pop_front();
            }
        }
        if (chunk.empty()) {
            finish();
            return py::none();
        }
        return py::array_t<float>(chunk.size(), chunk.data());
    }

  private:
    static int on_chunk(const float *samples, size_t n, void *user_data) {
        auto *job = static_cast<Job *>(user_data);
        const std::lock_guard<std::mutex> lock(job->mutex_);
        if (n > 0) job->chunks_.emplace_back(samples, samples + n);
        job->changed_.notify_all();
        return 0;
    }

    // Waits without the GIL until ready() (read under the lock); a signal handler's exception cancels
    // the call, waits for it to stop, and propagates.
    template <class Ready> void wait_until(Ready ready) {
        for (;;) {
            {
                py::gil_scoped_release release;
                std::unique_lock<std::mutex> lock(mutex_);
                if (changed_.wait_for(lock, kSignalPoll, ready)) return;
            }
            if (PyErr_CheckSignals() != 0) {
                stop();
                throw py::error_already_set();
            }
        }
    }

    void wait_for_end() {
        py::gil_scoped_release release;
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return done_; });
    }

    void finish() {
        wait_for_end();
        if (status_ != CHATTERBOX_OK) raise_status(status_, error_);
    }

    Request request_;
    volatile int cancel_ = 0; // written with __atomic_store_n, read by the engine
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<std::vector<float>> chunks_;
    bool done_ = false;
    chatterbox_status status_ = CHATTERBOX_OK;
    std::string error_;
    chatterbox_audio audio_{};
};

// One request stream on an engine: calls on it must not overlap (the package keeps a pool).
class Session {
  public:
    explicit Session(std::shared_ptr<Engine> engine) : engine_(std::move(engine)) {
        check(chatterbox_session_new(engine_->get(), 0, &session_));
    }
    ~Session() { chatterbox_session_free(session_); }
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    std::unique_ptr<Job> synthesize(const std::string &text, const Voice *voice, Request request,
                                    Job::Delivery delivery) {
        // The job keeps this session and the voice alive (keep_alive in the bindings below).
        return std::make_unique<Job>(
            worker_, std::move(request), delivery,
            [session = session_, text, voice](const chatterbox_synthesis_params &params, chatterbox_audio *audio) {
                return chatterbox_session_synthesize(session, text.c_str(), voice ? voice->get() : nullptr, &params,
                                                     audio);
            });
    }

    std::unique_ptr<Job> convert(const std::string &source_path, const Voice *voice, Request request) {
        return std::make_unique<Job>(worker_, std::move(request), Job::Delivery::whole,
                                     [session = session_, source_path, voice](const chatterbox_synthesis_params &params,
                                                                              chatterbox_audio *audio) {
                                         return chatterbox_session_convert_voice(session, source_path.c_str(),
                                                                                 voice ? voice->get() : nullptr,
                                                                                 &params, audio);
                                     });
    }

    // A voice from a recording; norm_loudness as tts_turbo.py's (only Turbo and Nano normalise).
    std::unique_ptr<Voice> voice_from_recording(const std::string &path, float exaggeration, bool norm_loudness) {
        chatterbox_voice_params params = chatterbox_voice_default_params();
        params.exaggeration = exaggeration;
        params.norm_loudness = norm_loudness ? 1 : 0;
        chatterbox_voice *voice = nullptr;
        call_released(
            [&] { return chatterbox_session_voice_from_audio_file(session_, path.c_str(), &params, &voice); });
        return std::make_unique<Voice>(voice);
    }

  private:
    std::shared_ptr<Engine> engine_;
    chatterbox_session *session_ = nullptr;
    Worker worker_; // idle when the session is freed: a Job keeps its session alive until its call ends
};

// The official model of `variant` ("english", "turbo", "nano", "multilingual") in its default place,
// downloaded as `chatterbox download` does when files are missing. on_file(index, count, name) is
// told of each file; a signal (Ctrl-C) stops the transfer and propagates.
std::string download_model(const std::string &variant_name, const std::string &t3_model,
                           const std::function<void(size_t, size_t, const std::string &)> &on_file) {
    namespace fs = std::filesystem;
    const chatterbox::Variant variant = chatterbox::parse_variant(variant_name);
    const chatterbox::ModelEnvironment env = chatterbox::ModelEnvironment::from_process();
    const std::string path = chatterbox::default_model_path(env, variant);
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return path; // $CHATTERBOX_MODEL names a .gguf
    chatterbox::ModelDownloadOptions options;
    options.variant = variant;
    options.t3_model = t3_model;
    options.endpoint = env.hf_endpoint;
    std::optional<py::error_already_set> interrupted;
    options.on_file = [&](size_t index, size_t count, const std::string &file) {
        py::gil_scoped_acquire acquire;
        if (on_file) on_file(index, count, file);
    };
    options.transfer.progress = [&](int64_t, int64_t) {
        py::gil_scoped_acquire acquire;
        if (PyErr_CheckSignals() == 0) return true;
        interrupted.emplace();
        return false;
    };
    std::string failure;
    {
        py::gil_scoped_release release;
        try {
            chatterbox::download_official_model(path, options);
        } catch (const std::exception &e) {
            failure = e.what();
        }
    }
    if (interrupted) throw *interrupted;
    if (!failure.empty()) {
        PyErr_SetString(PyExc_OSError, failure.c_str());
        throw py::error_already_set();
    }
    return path;
}

py::list parameter_table() {
    py::list table;
    for (size_t i = 0; i < chatterbox_synthesis_param_count(); ++i) {
        const chatterbox_param_info &p = *chatterbox_synthesis_param_info(i);
        py::dict row;
        row["name"] = p.name;
        row["meaning"] = p.meaning;
        row["min"] = p.min;
        row["max"] = p.max;
        row["min_excluded"] = p.min_excluded != 0;
        row["integer"] = p.integer != 0;
        row["default"] = p.default_value;
        row["is_flag"] = p.is_flag != 0;
        table.append(row);
    }
    return table;
}

std::vector<std::pair<std::string, std::string>> languages() {
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t i = 0; i < chatterbox_language_count(); ++i)
        out.emplace_back(chatterbox_language_code(i), chatterbox_language_name(i));
    return out;
}

} // namespace

PYBIND11_MODULE(_chatterbox_engine, m) {
    m.doc() = "Chatterbox Engine's C API for the chatterbox_engine package (use the package's classes).";
    cancelled_error = PyErr_NewExceptionWithDoc("chatterbox_engine.CancelledError",
                                                "The synthesis was cancelled (not by Ctrl-C, which raises "
                                                "KeyboardInterrupt).",
                                                PyExc_RuntimeError, nullptr);
    m.attr("CancelledError") = py::handle(cancelled_error);
    m.attr("VERSION") = chatterbox_version();

    py::class_<Engine, std::shared_ptr<Engine>>(m, "Engine")
        .def(py::init<const std::string &, const std::string &, int, int, const std::optional<std::string> &>(),
             py::arg("model_path"), py::arg("backend"), py::arg("threads"), py::arg("batch"), py::arg("t3_model"))
        .def_property_readonly("sample_rate", &Engine::sample_rate)
        .def_property_readonly("variant", &Engine::variant)
        .def_property_readonly("description", &Engine::description);

    py::class_<Voice>(m, "Voice")
        .def_static("load", &Voice::load, py::arg("path"))
        .def_static("builtin", &Voice::builtin, py::arg("engine"), py::arg("exaggeration"))
        .def("save", &Voice::save, py::arg("path"))
        .def("with_exaggeration", &Voice::with_exaggeration, py::arg("exaggeration"));

    py::class_<Request>(m, "Request")
        .def(py::init<const std::vector<std::pair<std::string, double>> &, std::optional<uint64_t>,
                      const std::optional<std::string> &, const std::optional<FloatArray> &>(),
             py::arg("values"), py::arg("seed"), py::arg("language"), py::arg("flow_noise") = py::none());

    py::class_<Job> job(m, "Job");
    py::enum_<Job::Delivery>(job, "Delivery")
        .value("whole", Job::Delivery::whole)
        .value("pieces", Job::Delivery::pieces)
        .value("low_latency", Job::Delivery::low_latency);
    job.def("result", &Job::result)
        .def("next_chunk", &Job::next_chunk)
        .def("cancel", &Job::cancel)
        .def("stop", &Job::stop);

    py::class_<Session>(m, "Session")
        .def(py::init<std::shared_ptr<Engine>>(), py::arg("engine"))
        .def("synthesize", &Session::synthesize, py::arg("text"), py::arg("voice"), py::arg("request"),
             py::arg("delivery"), py::keep_alive<0, 1>(), py::keep_alive<0, 3>())
        .def("convert", &Session::convert, py::arg("source_path"), py::arg("voice"), py::arg("request"),
             py::keep_alive<0, 1>(), py::keep_alive<0, 3>())
        .def("voice_from_recording", &Session::voice_from_recording, py::arg("path"), py::arg("exaggeration"),
             py::arg("norm_loudness"));

    m.def("download_model", &download_model, py::arg("variant"), py::arg("t3_model"), py::arg("on_file"));
    m.def(
        "official_model_files",
        [](const std::string &variant, const std::string &t3_model) {
            return chatterbox::official_model_files(chatterbox::parse_variant(variant), t3_model);
        },
        py::arg("variant"), py::arg("t3_model"), "the files download_model fetches");
    m.def("parameter_table", &parameter_table);
    m.def("why_no_gpu", &chatterbox::Backend::why_no_gpu, "why no GPU can be used here (\"\" when one can)");
    m.def("languages", &languages);
}
