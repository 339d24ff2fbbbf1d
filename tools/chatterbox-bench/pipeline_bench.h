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

struct PipelineBenchOptions {
    std::string weights;   // official folder or a GGUF from chatterbox-convert
    std::string voice_wav; // recording, repeated or cut to voice_seconds
    double voice_seconds = 10.0;
    std::string text;         // one sentence, so one T3 pass
    int max_new_tokens = 250; // synthetic weights rarely sample EOS: this fixes the length (10 s at most)
    uint64_t seed = 42;
    bool stream = true; // also run once streaming, for the time to first audio
    int stream_prompt_tokens = ChunkPlan{}.prompt_tokens; // voice prompt tokens the streaming flow windows see (0: all)
};

// Runs the benchmark and returns its results as JSON (times in milliseconds): "load_ms",
// "voice_ms", "t3_ms", "s3gen_ms", "hift_ms", "total_ms" (synthesis, voice excluded),
// "speech_tokens", "audio_seconds", "rtf", "stream_first_audio_ms", "stream_total_ms",
// "peak_rss_mib".
nlohmann::json run_pipeline_bench(const BackendOptions &backend, const PipelineBenchOptions &options);

} // namespace chatterbox::bench
