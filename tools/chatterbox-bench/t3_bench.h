#pragma once
// T3 benchmark: load, conditioning, prefill and per-token decode time of one set of T3 weights,
// with the memory-bandwidth bound of a decode step beside it.

#include "core/backend.h"
#include "models/chatterbox/t3/model.h"
#include "models/chatterbox/t3/session.h"

#include <nlohmann/json.hpp>

#include <string>

namespace chatterbox::bench {

struct T3BenchArguments {
    std::string weights;  // folder with t3_cfg.safetensors, or a GGUF from chatterbox-convert
    int text_tokens = 55; // text ids between the start and stop tokens (the golden case has 55)
    int prompt_tokens = 150;
    int decode_tokens = 64; // timed decode steps (forced tokens, so no early EOS)
    int max_new_tokens = 0; // the KV cache is sized as for a request with this many new tokens; 0: decode_tokens + 1
    float cfg_weight = 0.5f;
    bool plain_attention = false;                           // mul_mat + softmax instead of flash attention
    bool f32_cache = false;                                 // f32 KV cache instead of f16
    int decode_bucket = t3::RuntimeOptions{}.decode_bucket; // at least the cache capacity: one graph over it all
    double bandwidth_gb_per_s = 0;                          // measured read bandwidth for the bound (0: no bound)
    // > 0: also this many interleaved pairs of requests without and with the alignment analyzer
    // (t3/speech_guards.h), reported as "alignment_compare".
    int alignment_rounds = 0;
};

// Bytes a decode step reads: every backbone matrix and norm, the speech head, and the keys and
// values of mean_positions cache positions per row (flash attention skips the masked rest).
size_t decode_step_bytes(const t3::T3Model &model, int n_rows, double mean_positions, ggml_type kv_type);

// Runs the benchmark and returns its results as JSON (times in milliseconds):
// {"weights", "matrix_type", "backend", "attention", "kv_type", "cfg_rows", "decode_bucket", "cache_capacity",
//  "load_ms", "conditioning_ms", "prefill_tokens", "prefill_ms", "prefix_positions", "prefill_with_voice_prefix_ms"
//  (the same prefill with the conditioning's keys/values kept), "decode_tokens", "decode_ms_per_token" (mean),
//  "decode_ms_median", "decode_cpu_ms_per_token", "graphs_built", "step_bytes", "bound_ms", "ratio_to_bound",
//  "alignment_compare": {"rounds", "plain_ms_per_token", "alignment_ms_per_token", "plain_cpu_ms_per_token",
//  "alignment_cpu_ms_per_token", "ratio" (of the mean times)} with alignment_rounds}.
nlohmann::json run_t3_bench(const BackendOptions &backend, const T3BenchArguments &options);

} // namespace chatterbox::bench
