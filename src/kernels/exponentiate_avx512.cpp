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
    const __m512 j = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(j, _mm512_set1_ps(kLn2High), x);
    r = _mm512_fnmadd_ps(j, _mm512_set1_ps(kLn2Low), r);
    __m512 p = _mm512_set1_ps(kCoefficients[0]);
    for (int c = 1; c < 6; ++c) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kCoefficients[c]));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, j); // p · 2^j
}

} // namespace

// The tail goes through masked loads and stores: every element takes the same vector code.
float exponentiate_avx512(float *s, int64_t n, float scale) {
    const auto lanes = [n](int64_t i) { return __mmask16(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1); };
    __m512 top16 = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n; i += 16) top16 = _mm512_max_ps(top16, _mm512_mask_loadu_ps(top16, lanes(i), s + i));
    const float top = _mm512_reduce_max_ps(top16);
    const __m512 scale16 = _mm512_set1_ps(scale), shift16 = _mm512_set1_ps(-scale * top);
    __m512 sum16 = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mask = lanes(i);
        const __m512 e = exp_lanes(_mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, s + i), scale16, shift16));
        _mm512_mask_storeu_ps(s + i, mask, e);
        sum16 = _mm512_mask_add_ps(sum16, mask, sum16, e);
    }
    return _mm512_reduce_add_ps(sum16);
}

} // namespace chatterbox::kernels
