#include "kernels/exponentiate.h"

#include "ggml.h"

#include <algorithm>
#include <cmath>

namespace chatterbox::kernels {

float exponentiate_scalar(float *s, int64_t n, float scale) {
    const float top = *std::max_element(s, s + n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += s[i] = std::exp(scale * (s[i] - top));
    return float(sum);
}

float exponentiate_to_bf16_scalar(float *s, int64_t n, float scale, uint16_t *out) {
    const float sum = exponentiate(s, n, scale);
    for (int64_t i = 0; i < n; ++i) out[i] = ggml_fp32_to_bf16(s[i]).bits;
    return sum;
}

float exponentiate_to_bf16(float *s, int64_t n, float scale, uint16_t *out) {
#if defined(__x86_64__)
    static const auto kernel = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")
                                   ? exponentiate_to_bf16_avx512
                                   : exponentiate_to_bf16_scalar;
    return kernel(s, n, scale, out);
#else
    return exponentiate_to_bf16_scalar(s, n, scale, out);
#endif
}

float exponentiate(float *s, int64_t n, float scale) {
#if defined(__x86_64__)
    static const auto kernel = __builtin_cpu_supports("avx512f")                                     ? exponentiate_avx512
                               : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? exponentiate_avx2
                                                                                                  : exponentiate_scalar;
    return kernel(s, n, scale);
#else
    return exponentiate_scalar(s, n, scale);
#endif
}

} // namespace chatterbox::kernels
