#include "pipeline_bench.h"

#include "audio/audio_file.h"
#include "core/error.h"
#include "models/chatterbox/session.h"
#include "timing.h"

#include <fstream>
#include <map>
#include <sstream>

namespace chatterbox::bench {

namespace {

// The process's peak resident set since the last reset_peak_rss(), from /proc (Linux).
void reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    if (clear) clear << "5"; // resets VmHWM to the current RSS
}

double peak_rss_mib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return double(std::stoll(line.substr(6))) / 1024.0; // kB
    return 0;
}

// The recording repeated end to end until it covers `seconds`, then cut there.
audio::Audio voice_recording(const std::string &path, double seconds) {
    const audio::Audio recording = audio::read_audio(path);
    if (recording.samples.empty()) fail("pipeline bench: ", path, " holds no samples");
    audio::Audio out{{}, recording.sample_rate};
    const size_t wanted = size_t(seconds * recording.sample_rate);
    while (out.samples.size() < wanted)
        out.samples.insert(out.samples.end(), recording.samples.begin(), recording.samples.end());
    out.samples.resize(wanted);
    return out;
}

// Wall time per pipeline stage: the time from one progress report to the next belongs to the
// stage named by the earlier one (streaming interleaves T3 with the flow and HiFT).
struct StageClock {
    std::map<std::string, double> ms;
    std::string current;
    Clock::time_point since;

    void report(const char *stage) {
        const auto now = Clock::now();
        if (!current.empty()) ms[current] += ms_between(since, now);
        current = stage;
        since = now;
    }
};

} // namespace

nlohmann::json run_pipeline_bench(const BackendOptions &backend, const PipelineBenchOptions &options) {
    if (options.text.empty() || options.max_new_tokens < 1 || options.voice_seconds <= 0)
        fail("pipeline bench: need a text, at least 1 new token and a voice of positive length");
    reset_peak_rss();
    auto start = Clock::now();
    const Engine engine({options.weights, backend});
    engine.voice_builder();
    Session session(engine);
    const double load_ms = ms_since(start);

    const audio::Audio recording = voice_recording(options.voice_wav, options.voice_seconds);
    start = Clock::now();
    const Voice voice = session.voice_from_audio(recording, SynthesisParams{}.exaggeration);
    const double voice_ms = ms_since(start);

    SynthesisOptions synthesis;
    synthesis.params.sampling.seed = options.seed;
    synthesis.params.sampling.max_new_tokens = options.max_new_tokens;
    StageClock stages;
    synthesis.on_progress = [&](const char *stage, float) { stages.report(stage); };
    const SynthesisResult offline = session.synthesize(options.text, voice, synthesis);
    const double audio_seconds = double(offline.wave.size()) / double(offline.sample_rate);

    nlohmann::json out{{"weights", options.weights},
                       {"description", engine.description()},
                       {"text", options.text},
                       {"voice_seconds", options.voice_seconds},
                       {"max_new_tokens", options.max_new_tokens},
                       {"load_ms", load_ms},
                       {"voice_ms", voice_ms},
                       {"t3_ms", stages.ms["t3"]},
                       {"s3gen_ms", stages.ms["s3gen"]},
                       {"hift_ms", stages.ms["hift"]},
                       {"total_ms", offline.seconds_total * 1e3},
                       {"speech_tokens", offline.speech_tokens},
                       {"audio_seconds", audio_seconds},
                       {"rtf", offline.seconds_total / audio_seconds},
                       {"rtf_with_voice", (offline.seconds_total + voice_ms / 1e3) / audio_seconds}};
    if (options.stream) {
        synthesis.stream = true;
        synthesis.chunks.prompt_tokens = options.stream_prompt_tokens;
        out["stream_prompt_tokens"] = options.stream_prompt_tokens;
        synthesis.on_progress = nullptr;
        synthesis.on_chunk = [](const float *, size_t) { return true; };
        const SynthesisResult streamed = session.synthesize(options.text, voice, synthesis);
        out["stream_first_audio_ms"] = streamed.seconds_to_first_audio * 1e3;
        out["stream_total_ms"] = streamed.seconds_total * 1e3;
        out["stream_rtf"] = streamed.seconds_total / (double(streamed.wave.size()) / double(streamed.sample_rate));
    }
    out["peak_rss_mib"] = peak_rss_mib();
    return out;
}

} // namespace chatterbox::bench
