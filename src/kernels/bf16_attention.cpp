#include "kernels/bf16_attention.h"

#include "core/error.h"

namespace chatterbox::kernels::bf16_attention {

bool runs_here() {
#if defined(__x86_64__)
    static const bool runs = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
    return runs;
#else
    return false;
#endif
}

bool takes(int64_t head_dim) { return head_dim > 0 && head_dim % 16 == 0 && head_dim <= 64; }

int64_t score_stride(int64_t n_kv) { return (n_kv + kKeyBlock - 1) / kKeyBlock * kKeyBlock; }
int64_t probability_stride(int64_t n_kv) { return (n_kv + 1) / 2 * 2; }
int64_t packed_keys_size(int64_t n_kv, int64_t head_dim) { return score_stride(n_kv) * head_dim; }
int64_t packed_values_size(int64_t n_kv, int64_t head_dim) { return probability_stride(n_kv) * head_dim; }

#if !defined(__x86_64__)
// Only x86-64 builds have the products (bf16_attention_avx512.cpp); runs_here() is false elsewhere.
void pack_keys(const float *, int64_t, int64_t, int64_t, uint16_t *) { fail("bf16 attention: not built for this CPU"); }
void pack_values(const float *, int64_t, int64_t, int64_t, uint16_t *) {
    fail("bf16 attention: not built for this CPU");
}
void scores(const uint16_t *, int64_t, int64_t, const uint16_t *, int64_t, float *) {
    fail("bf16 attention: not built for this CPU");
}
void weighted_values(const uint16_t *, int64_t, const uint16_t *, int64_t, int64_t, const float *, float *, int64_t) {
    fail("bf16 attention: not built for this CPU");
}
#endif

} // namespace chatterbox::kernels::bf16_attention
