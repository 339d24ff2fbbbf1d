#pragma once
// Whole-pipeline benchmark: one model file, a voice from a recording, one fixed sentence, with
// per-stage times (voice, T3, S3Gen, HiFT), the real-time factor, the time to first audio when
// streaming, and the peak resident memory.

#include "core/backend.h"
#include "models/chatterbox/streaming.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace chatterbox::bench {

struct PipelineBenchArguments {
    std::string weights;   // official folder or a GGUF from chatterbox-convert
    std::string voice_wav; // recording, repeated or cut to voice_seconds
    double voice_seconds = 10.0;
    std::string text;         // one sentence, so one T3 pass
    int max_new_tokens = 250; // synthetic weights rarely sample EOS: this fixes the length (10 s at most)
    bool ignore_eos = false;  // T3 runs exactly max_new_tokens steps, whatever it samples
    bool split_text = true;   // false: the text is one T3 pass even when it has several sentences
    int cfm_steps = 0;        // the flow's Euler steps (0: the model's own)
    uint64_t seed = 42;
    std::string language = "en"; // the text's language, for a model that takes one (multilingual)
    bool stream = true;          // also run once streaming, for the time to first audio
    int stream_prompt_tokens = ChunkPlan{}.prompt_tokens; // voice prompt tokens the streaming flow windows see (0: all)
    double bandwidth_gb_per_s = 0;                        // measured read bandwidth for T3's bound (0: no bound)
    double f32_peak_gflop_per_s = 0; // the machine's measured f32 FMA peak, for each stage's share (0: none)
};

// Runs the benchmark and returns its results as JSON (times in milliseconds): "load_ms",
// "voice_ms", "t3_ms", "s3gen_ms", "hift_ms", "total_ms" (synthesis, voice excluded),
// "speech_tokens", "pieces", "t3_steps", "eos_step" (per text piece, -1: none; with ignore_eos where
// it would have ended), "t3_prefill_ms" (conditioning and the first prefill),
// "t3_decode_ms_per_step" (mean), "t3_decode_ms_median", for one piece "t3_step_bytes" and, with a
// bandwidth, "t3_bound_ms" and "t3_ratio_to_bound", "audio_seconds", "rtf", "stream_first_audio_ms",
// "stream_total_ms", "stream_first_audio_kept_voice_ms" (the voice's T3 prefix kept, as the server
// keeps it), "peak_rss_mib"; per stage (voice, t3, s3gen, hift) "stage_gflop",
// "stage_gflop_per_s" and, with an f32 peak, "stage_of_f32_peak".
nlohmann::json run_pipeline_bench(const BackendOptions &backend, const PipelineBenchArguments &options);

} // namespace chatterbox::bench
