#pragma once
// S3Gen benchmark: flow encoder, CFM (per Euler step and all steps) and HiFT for one set of
// weights, on a voice prompt and generated tokens of chosen lengths, with the estimator's FLOP
// count and achieved rate, and the output's distance from a reference run (other weights).

#include "core/backend.h"
#include "models/chatterbox/s3gen/estimator_blocks.h"
#include "models/chatterbox/s3gen/flow_cfm.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::bench {

struct S3GenBenchArguments {
    std::string weights;        // official folder or a GGUF from chatterbox-convert
    int prompt_tokens = 250;    // voice prompt: 10 s at 25 tokens/s (twice as many prompt-mel frames)
    int generated_tokens = 250; // 10 s of generated speech
    int repeats = 2;            // timed runs; the first also builds the graphs
    uint64_t seed = 42;         // inputs, CFM noise and HiFT source noise
    nn::AttentionPath attention = s3gen::default_estimator_attention();
    int cfm_steps = 0; // Euler steps (0: the model's own)
};

// What a run produced, for comparing weight types against each other.
struct S3GenOutputs {
    std::vector<float> mel;  // (80, generated frames)
    std::vector<float> wave; // 24 kHz
};

// Runs the benchmark and returns its results as JSON (times in milliseconds): "encoder_ms",
// "cfm_step_ms", "cfm_ms", "hift_ms" as {min, median}, each also per second of audio, the
// estimator FLOPs and GFLOP/s, the flow's products' kernels ("flow_kernels": weights per kernel).
// When `reference` holds outputs, adds the largest absolute and the RMS differences from them
// ("mel_max_diff", "mel_rms_diff", "wave_max_diff"); `outputs` receives this run's.
nlohmann::json run_s3gen_bench(const BackendOptions &backend, const S3GenBenchArguments &options,
                               const S3GenOutputs *reference, S3GenOutputs &outputs);

} // namespace chatterbox::bench
