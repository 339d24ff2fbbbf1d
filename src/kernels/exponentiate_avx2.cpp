#include "kernels/exp_polynomial.h"
#include "kernels/exponentiate.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace chatterbox::kernels {

namespace {

using namespace exp_polynomial;

// exp(x) for x <= 0.
__m256 exp_lanes(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(kLowest));
    const __m256 j =
        _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(j, _mm256_set1_ps(kLn2High), x);
    r = _mm256_fnmadd_ps(j, _mm256_set1_ps(kLn2Low), r);
    __m256 p = _mm256_set1_ps(kCoefficients[0]);
    for (int c = 1; c < 6; ++c) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kCoefficients[c]));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i two_j = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(j), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(two_j));
}

} // namespace

float exponentiate_avx2(float *s, int64_t n, float scale) {
    const int64_t whole = n / 8 * 8;
    __m256 top8 = _mm256_set1_ps(-INFINITY);
    for (int64_t i = 0; i < whole; i += 8) top8 = _mm256_max_ps(top8, _mm256_loadu_ps(s + i));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, top8);
    float top = *std::max_element(lanes, lanes + 8);
    for (int64_t i = whole; i < n; ++i) top = std::max(top, s[i]);
    const __m256 scale8 = _mm256_set1_ps(scale), shift8 = _mm256_set1_ps(-scale * top);
    __m256 sum8 = _mm256_setzero_ps();
    for (int64_t i = 0; i < whole; i += 8) {
        const __m256 e = exp_lanes(_mm256_fmadd_ps(_mm256_loadu_ps(s + i), scale8, shift8));
        _mm256_storeu_ps(s + i, e);
        sum8 = _mm256_add_ps(sum8, e);
    }
    _mm256_store_ps(lanes, sum8);
    double sum = 0;
    for (float lane : lanes) sum += lane;
    for (int64_t i = whole; i < n; ++i) sum += s[i] = std::exp(scale * (s[i] - top));
    return float(sum);
}

} // namespace chatterbox::kernels
