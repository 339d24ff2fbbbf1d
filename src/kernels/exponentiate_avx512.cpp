#include "kernels/exp_polynomial.h"
#include "kernels/exponentiate.h"

#include <immintrin.h>

#include <cmath>

namespace chatterbox::kernels {

namespace {

using namespace exp_polynomial;

// exp(x) for x <= 0.
__m512 exp_lanes(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(kLowest));
    const __m512 j =
        _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(j, _mm512_set1_ps(kLn2High), x);
    r = _mm512_fnmadd_ps(j, _mm512_set1_ps(kLn2Low), r);
    __m512 p = _mm512_set1_ps(kCoefficients[0]);
    for (int c = 1; c < 6; ++c) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kCoefficients[c]));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, j); // p · 2^j
}

} // namespace

// Whole vectors go through plain loads and stores, the tail through masked ones (7 % faster on the
// Zen 5 VM than masking every vector); every element takes the same exp_lanes, and the sum the same
// order of additions, either way.
float exponentiate_avx512(float *s, int64_t n, float scale) {
    const int64_t whole = n / 16 * 16;
    const __mmask16 tail = __mmask16((1u << (n - whole)) - 1);
    __m512 top16 = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < whole; i += 16) top16 = _mm512_max_ps(top16, _mm512_loadu_ps(s + i));
    if (tail) top16 = _mm512_max_ps(top16, _mm512_mask_loadu_ps(top16, tail, s + whole));
    const float top = _mm512_reduce_max_ps(top16);
    const __m512 scale16 = _mm512_set1_ps(scale), shift16 = _mm512_set1_ps(-scale * top);
    __m512 sum16 = _mm512_setzero_ps();
    for (int64_t i = 0; i < whole; i += 16) {
        const __m512 e = exp_lanes(_mm512_fmadd_ps(_mm512_loadu_ps(s + i), scale16, shift16));
        _mm512_storeu_ps(s + i, e);
        sum16 = _mm512_add_ps(sum16, e);
    }
    if (tail) {
        const __m512 e = exp_lanes(_mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, s + whole), scale16, shift16));
        _mm512_mask_storeu_ps(s + whole, tail, e);
        sum16 = _mm512_mask_add_ps(sum16, tail, sum16, e);
    }
    return _mm512_reduce_add_ps(sum16);
}

} // namespace chatterbox::kernels
