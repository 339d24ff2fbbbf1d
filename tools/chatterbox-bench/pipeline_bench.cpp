#include "pipeline_bench.h"

#include "graph_flops.h"

#include "audio/audio_file.h"
#include "core/error.h"
#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/runtime.h"
#include "t3_bench.h"
#include "timing.h"

#include <fstream>
#include <map>
#include <sstream>

namespace chatterbox::bench {

namespace {

// The recording repeated end to end until it covers `seconds`, then cut there.
audio::AudioBuffer voice_recording(const std::string &path, double seconds) {
    const audio::AudioBuffer recording = audio::read_audio(path);
    if (recording.samples.empty()) fail("pipeline bench: ", path, " holds no samples");
    audio::AudioBuffer out{{}, recording.sample_rate};
    const size_t wanted = size_t(seconds * recording.sample_rate);
    while (out.samples.size() < wanted)
        out.samples.insert(out.samples.end(), recording.samples.begin(), recording.samples.end());
    out.samples.resize(wanted);
    return out;
}

// Wall time per pipeline stage: the time from one progress report to the next belongs to the
// stage named by the earlier one (streaming interleaves T3 with the flow and HiFT). T3 reports
// ("t3", 0) when it starts and ("t3", > 0) after every step, so an interval between two step
// reports is one decode step, and the one from the start to the first step is the conditioning
// and the prefill (a later text piece's prefill follows another stage's report and is not counted).
struct StageClock {
    std::map<std::string, double> ms;
    std::vector<double> t3_decode_ms;
    double t3_prefill_ms = 0;
    std::string current;
    bool current_is_t3_step = false;
    Clock::time_point since;

    void report(const char *stage, float fraction) {
        const auto now = Clock::now();
        const double elapsed = ms_between(since, now);
        const bool t3_step = std::string(stage) == "t3" && fraction > 0;
        if (!current.empty()) ms[current] += elapsed;
        if (t3_step && current == "t3") {
            if (current_is_t3_step)
                t3_decode_ms.push_back(elapsed);
            else
                t3_prefill_ms = elapsed;
        }
        current = stage;
        current_is_t3_step = t3_step;
        since = now;
    }
};

// The time to first audio of a streamed request in a voice whose T3 conditioning prefix is kept, as
// chatterbox-server keeps its voices' (t3/prefix_cache.h): on a session of a runtime that keeps one,
// a request that computes and keeps it, then the timed one; each ends at its first audio.
double first_audio_with_kept_voice_ms(const PipelineModel &engine, const std::string &text,
                                      const VoiceConditionals &voice, SynthesisOptions synthesis) {
    RuntimeOptions keeping;
    keeping.voice_prefixes = 1;
    Runtime runtime(engine, keeping);
    PipelineSession session(runtime);
    synthesis.on_chunk = [](const float *, size_t) { return false; };
    double ms = 0;
    for (int request = 0; request < 2; ++request) {
        const auto start = Clock::now();
        try {
            session.synthesize(text, voice, synthesis);
            fail("pipeline bench: a streamed request made no audio");
        } catch (const Cancelled &) {
            ms = ms_since(start);
        }
    }
    if (runtime.t3_prefixes()->hits() != 1) fail("pipeline bench: the second request did not find its voice kept");
    return ms;
}

} // namespace

nlohmann::json run_pipeline_bench(const BackendOptions &backend, const PipelineBenchArguments &options) {
    if (options.text.empty() || options.max_new_tokens < 1 || options.voice_seconds <= 0)
        fail("pipeline bench: need a text, at least 1 new token and a voice of positive length");
    reset_peak_rss();
    auto start = Clock::now();
    const PipelineModel engine({options.weights, backend});
    engine.voice_builder();
    PipelineSession session(engine);
    const double load_ms = ms_since(start);

    const audio::AudioBuffer recording = voice_recording(options.voice_wav, options.voice_seconds);
    StageFlops flops; // of the offline run: the streaming run below does the same work again
    flops.set_stage("voice");
    start = Clock::now();
    const VoiceConditionals voice = session.voice_from_audio(recording, SynthesisParams{}.exaggeration);
    const double voice_ms = ms_since(start);

    SynthesisOptions synthesis;
    synthesis.params.sampling.seed = options.seed;
    synthesis.params.sampling.max_new_tokens = options.max_new_tokens;
    synthesis.params.sampling.ignore_eos = options.ignore_eos;
    synthesis.params.split_text = options.split_text;
    synthesis.params.cfm_steps = options.cfm_steps;
    if (engine.text().has_languages()) synthesis.params.language = options.language;
    StageClock stages;
    synthesis.on_progress = [&](const char *stage, float fraction) {
        stages.report(stage, fraction);
        flops.set_stage(stage);
    };
    const SynthesisResult offline = session.synthesize(options.text, voice, synthesis);
    flops.set_stage("");
    const double audio_seconds = double(offline.wave.size()) / double(offline.sample_rate);

    nlohmann::json out{{"weights", options.weights},
                       {"description", engine.description()},
                       {"text", options.text},
                       {"voice_seconds", options.voice_seconds},
                       {"max_new_tokens", options.max_new_tokens},
                       {"cfm_steps", s3gen::cfm_steps(engine.flow().hparams(), options.cfm_steps)},
                       {"flow_kernels", engine.flow().matmul_kernel_counts()},
                       {"load_ms", load_ms},
                       {"voice_ms", voice_ms},
                       {"t3_ms", stages.ms["t3"]},
                       {"s3gen_ms", stages.ms["s3gen"]},
                       {"hift_ms", stages.ms["hift"]},
                       {"total_ms", offline.seconds_total * 1e3},
                       {"speech_tokens", offline.speech_tokens},
                       {"pieces", offline.pieces},
                       {"t3_steps", offline.t3_steps},
                       {"eos_step", offline.eos_steps},
                       {"t3_prefill_ms", stages.t3_prefill_ms},
                       {"audio_seconds", audio_seconds},
                       {"rtf", offline.seconds_total / audio_seconds},
                       {"rtf_with_voice", (offline.seconds_total + voice_ms / 1e3) / audio_seconds}};
    stages.ms["voice"] = voice_ms;
    // Achieved rate per stage from the FLOPs its graphs' shapes count (graph_flops.h), and its share
    // of the machine's f32 FMA peak where measured (T3 decode is bound by memory instead: see below).
    for (const char *stage : {"voice", "t3", "s3gen", "hift"}) {
        const double gflop = flops.flops(stage) / 1e9, rate = gflop / (stages.ms[stage] / 1e3);
        out["stage_gflop"][stage] = gflop;
        out["stage_gflop_per_s"][stage] = rate;
        if (options.f32_peak_gflop_per_s > 0) out["stage_of_f32_peak"][stage] = rate / options.f32_peak_gflop_per_s;
    }
    if (!stages.t3_decode_ms.empty()) {
        const Spread decode = spread_of(stages.t3_decode_ms);
        out["t3_decode_ms_per_step"] = decode.mean;
        out["t3_decode_ms_median"] = decode.median;
        if (offline.pieces == 1) {
            // The steps attended to length - steps + 1 ... length positions of the cache.
            const t3::T3Session &t3 = session.t3();
            const double mean_positions = t3.length() - double(stages.t3_decode_ms.size() - 1) / 2;
            const size_t step_bytes = decode_step_bytes(engine.t3(), t3.n_rows(), mean_positions, t3.options().kv_type);
            out["t3_step_bytes"] = step_bytes;
            if (options.bandwidth_gb_per_s > 0) {
                const double bound_ms = double(step_bytes) / (options.bandwidth_gb_per_s * 1e9) * 1e3;
                out["t3_bound_ms"] = bound_ms;
                out["t3_ratio_to_bound"] = decode.mean / bound_ms;
            }
        }
    }
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
    out["peak_rss_mib"] = peak_rss_mib(); // of one session: the one below adds its own graphs and cache
    if (options.stream)
        out["stream_first_audio_kept_voice_ms"] =
            first_audio_with_kept_voice_ms(engine, options.text, voice, synthesis);
    return out;
}

} // namespace chatterbox::bench
