#include "commands.h"

#include "model_setup.h"
#include "progress.h"

#include "audio/audio_file.h"
#include "chatterbox/chatterbox.hpp"
#include "core/npy.h"
#include "models/chatterbox/model_download.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <type_traits>

namespace cli {

namespace api = chatterbox::api;
using chatterbox::concat;
using chatterbox::fail;

namespace {

// Set by Ctrl-C; the engine polls it through params.cancel (an int pointer).
volatile std::sig_atomic_t interrupted = 0;
static_assert(std::is_same_v<std::sig_atomic_t, int>, "params.cancel points to an int");

extern "C" void on_interrupt(int) { interrupted = 1; }

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string fixed(double value, int decimals) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

api::Engine load_engine(const EngineArguments &options, Progress &progress) {
    const std::string model = locate_model(options, progress);
    progress.note(concat("loading ", model));
    const auto start = std::chrono::steady_clock::now();
    api::EngineParams params(model);
    for (const chatterbox::EngineSetting &setting : chatterbox::engine_settings_table())
        if (setting.name != std::string_view("model")) params.set(setting.name, setting.get(options.settings));
    api::Engine engine(params);
    progress.note(concat("model: ", engine.description(), " (loaded in ", fixed(seconds_since(start), 1), " s)"));
    return engine;
}

// --voice FILE (a recording or a saved voice), else the model's built-in voice.
api::Voice open_voice(api::Engine &engine, const std::string &path, float exaggeration) {
    if (!path.empty()) return engine.open_voice(path, exaggeration);
    try {
        return engine.builtin_voice(exaggeration);
    } catch (const api::Exception &e) {
        if (e.status() != CHATTERBOX_ERROR_MODEL) throw;
        fail(e.what(), "\nThis model has no built-in voice: pass --voice ref.wav (a few seconds of clean speech) or a "
                       "voice file saved with --save-voice.");
    }
}

// --flow-noise FILE: the flow's initial noise, (80, frames) or (1, 80, frames) as torch's z; none
// for "".
class FlowNoiseFile {
  public:
    explicit FlowNoiseFile(const std::string &path) {
        if (path.empty()) return;
        const chatterbox::NpyArray array = chatterbox::read_npy(path);
        const chatterbox::Shape &shape = array.shape;
        const bool channels_first = (shape.size() == 2 && shape[0] == CHATTERBOX_MEL_BINS) ||
                                    (shape.size() == 3 && shape[0] == 1 && shape[1] == CHATTERBOX_MEL_BINS);
        if (!channels_first || shape.back() < 1)
            fail(path, ": the flow noise must have the shape (", CHATTERBOX_MEL_BINS, ", frames) or (1, ",
                 CHATTERBOX_MEL_BINS, ", frames), got ", chatterbox::shape_str(shape));
        values_ = array.f32();
        frames_ = size_t(shape.back());
    }
    chatterbox_synthesis_params applied_to(chatterbox_synthesis_params params) const {
        if (!values_.empty()) {
            params.flow_noise = values_.data();
            params.flow_noise_frames = frames_;
        }
        return params;
    }

  private:
    std::vector<float> values_;
    size_t frames_ = 0;
};

// Raw PCM on stdout (kStreamFormat), written as each chunk arrives.
class PcmWriter {
  public:
    bool write(const float *samples, size_t n) {
        bytes_.resize(2 * n);
        for (size_t i = 0; i < n; ++i) {
            const float clipped = std::fmax(-1.0f, std::fmin(1.0f, samples[i]));
            const auto value = static_cast<uint16_t>(static_cast<int16_t>(std::lrint(clipped * 32767.0f)));
            bytes_[2 * i] = static_cast<unsigned char>(value & 0xFF); // little-endian on every host
            bytes_[2 * i + 1] = static_cast<unsigned char>(value >> 8);
        }
        if (std::fwrite(bytes_.data(), 1, bytes_.size(), stdout) != bytes_.size() || std::fflush(stdout) != 0) {
            error_ = errno;
            return false;
        }
        return true;
    }
    int error() const { return error_; }

  private:
    std::vector<unsigned char> bytes_;
    int error_ = 0;
};

// "3 pieces: eos, length_bound, eos (1 cut by the length bound)": how each text piece's speech ended.
std::string piece_summary(const api::Audio &audio) {
    std::string line = concat(audio.piece_ends.size(), audio.piece_ends.size() == 1 ? " piece: " : " pieces: ");
    for (size_t i = 0; i < audio.piece_ends.size(); ++i) {
        const char *name = chatterbox_piece_end_name(audio.piece_ends[i]);
        line += concat(i ? ", " : "", name ? name : "?");
    }
    if (audio.pieces_at_length_bound > 0)
        line += concat(" (", audio.pieces_at_length_bound, " cut by the length bound from the text)");
    return line;
}

// Runs one synthesis or conversion with progress, Ctrl-C and the output (stream or file), then
// prints the summary line. Returns the exit code. A file is written as the audio is made (each
// text piece when it is done), so memory stays flat however long the text; it replaces `path` only
// when complete, or with what was made so far when interrupted by Ctrl-C.
int produce(const OutputArguments &output, chatterbox_synthesis_params params, int sample_rate, Progress &progress,
            const std::function<api::Audio(const api::Options &)> &run) {
    PcmWriter pcm;
    std::optional<chatterbox::audio::AudioFileWriter> file;
    size_t samples = 0;
    api::Options options;
    options.params = params;
    options.params.stream = output.stream ? 1 : 0;
    options.params.discard_samples = 1;
    options.params.cancel = &interrupted;
    options.on_progress = [&](const char *stage, float fraction) { progress.update(stage, fraction); };
    if (output.stream) {
        options.on_chunk = [&](const float *chunk, size_t n) {
            samples += n;
            return pcm.write(chunk, n);
        };
    } else {
        file.emplace(output.path, sample_rate);
        options.on_chunk = [&](const float *chunk, size_t n) {
            file->write(chunk, n);
            samples += n;
            return true;
        };
    }
    auto seconds = [&] { return double(samples) / sample_rate; };

    std::signal(SIGINT, on_interrupt);
    std::signal(SIGPIPE, SIG_IGN); // a closed pipe on stdout becomes a write error, reported below
    api::Audio audio;
    try {
        audio = run(options);
    } catch (const api::Exception &e) {
        progress.clear();
        if (pcm.error() != 0) fail("cannot write the audio to stdout: ", std::strerror(pcm.error()));
        if (e.status() == CHATTERBOX_ERROR_CANCELLED && interrupted) {
            if (file && samples > 0) {
                file->finish();
                std::fprintf(stderr, "chatterbox: interrupted; wrote the %s s made so far to %s\n",
                             fixed(seconds(), 2).c_str(), output.path.c_str());
            } else {
                std::fprintf(stderr, "chatterbox: interrupted\n");
            }
            return kExitInterrupted;
        }
        throw;
    }
    progress.clear();
    if (file) file->finish();

    const std::string where = output.stream ? concat("streamed (", kStreamFormat, ")") : "wrote " + output.path;
    progress.note(concat(where, ": ", fixed(seconds(), 2), " s of audio in ", fixed(audio.seconds_total, 2),
                         " s (real-time factor ",
                         samples > 0 ? fixed(audio.seconds_total / seconds(), 2) : std::string("-"),
                         ", first audio after ", fixed(audio.seconds_to_first_audio, 2), " s)"));
    if (!audio.piece_ends.empty()) progress.note(piece_summary(audio));
    return kExitOk;
}

} // namespace

int run_synthesis(const SynthesisArguments &options) {
    const std::string text = gather_text(options);
    if (!text.empty()) check_output(options.output);
    if (!options.voice.empty()) check_input_file(options.voice, "voice file");
    if (!options.save_voice.empty()) check_writable(options.save_voice, "voice file");
    const FlowNoiseFile flow_noise(options.flow_noise);

    Progress progress(options.engine.quiet);
    api::Engine engine = load_engine(options.engine, progress);
    const api::Voice voice = open_voice(engine, options.voice, options.params.exaggeration);
    if (!options.save_voice.empty()) {
        voice.save(options.save_voice);
        progress.note("saved the voice to " + options.save_voice);
    }
    if (text.empty()) return kExitOk;
    chatterbox_synthesis_params params = flow_noise.applied_to(options.params);
    params.language = options.language.empty() ? nullptr : options.language.c_str();
    return produce(options.output, params, engine.sample_rate(), progress,
                   [&](const api::Options &run_options) { return engine.synthesize(text, &voice, run_options); });
}

int run_conversion(const ConversionArguments &options) {
    check_output(options.output);
    check_input_file(options.source, "source audio");
    if (!options.voice.empty()) check_input_file(options.voice, "voice file");
    const FlowNoiseFile flow_noise(options.flow_noise);

    Progress progress(options.engine.quiet);
    api::Engine engine = load_engine(options.engine, progress);
    const api::Voice voice = open_voice(engine, options.voice, options.params.exaggeration);
    return produce(
        options.output, flow_noise.applied_to(options.params), engine.sample_rate(), progress,
        [&](const api::Options &run_options) { return engine.convert_voice(options.source, &voice, run_options); });
}

int run_download(const DownloadArguments &options) {
    const chatterbox::Variant variant = chatterbox::parse_variant(options.variant);
    const std::string dir = options.model.empty()
                                ? chatterbox::default_model_path(chatterbox::ModelEnvironment::from_process(), variant)
                                : options.model;
    Progress progress(options.quiet);
    download_model(dir, progress, variant, options.t3_model);
    return kExitOk;
}

} // namespace cli
