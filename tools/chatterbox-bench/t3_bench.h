#pragma once
// T3 benchmark: load, conditioning, prefill and per-token decode time of one set of T3 weights,
// with the memory-bandwidth bound of a decode step beside it.

#include "core/backend.h"

#include <nlohmann/json.hpp>

#include <string>

namespace chatterbox::bench {

struct T3BenchOptions {
    std::string weights;  // folder with t3_cfg.safetensors, or a GGUF from chatterbox-convert
    int text_tokens = 55; // text ids between the start and stop tokens (the golden case has 55)
    int prompt_tokens = 150;
    int decode_tokens = 64; // timed decode steps (forced tokens, so no early EOS)
    float cfg_weight = 0.5f;
    bool plain_attention = false;  // mul_mat + softmax instead of flash attention
    bool f32_cache = false;        // f32 KV cache instead of f16
    double bandwidth_gb_per_s = 0; // measured read bandwidth for the bound (0: no bound)
};

// Runs the benchmark and returns its results as JSON (times in milliseconds):
// {"weights", "matrix_type", "backend", "load_ms", "conditioning_ms", "prefill_tokens", "prefill_ms",
//  "decode_tokens", "decode_ms_per_token" (mean), "decode_ms_median", "step_bytes", "bound_ms", "ratio_to_bound"}.
nlohmann::json run_t3_bench(const BackendOptions &backend, const T3BenchOptions &options);

} // namespace chatterbox::bench
