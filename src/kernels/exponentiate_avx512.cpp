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

// exp(x) for x <= 0 to |relative error| < 1e-5, for numerators rounded to bf16 next: a degree-4
// polynomial, and 2^j added to the exponent bits (j from the rounding constant 1.5·2^23, whose low
// mantissa bits then hold it; x ≥ −87 keeps p·2^j a normal float).
__m512 coarse_exp_lanes(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(kLowest));
    const __m512 rounding = _mm512_set1_ps(12582912.0f);
    const __m512 shifted = _mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), rounding);
    const __m512 j = _mm512_sub_ps(shifted, rounding);
    __m512 r = _mm512_fnmadd_ps(j, _mm512_set1_ps(kLn2High), x);
    r = _mm512_fnmadd_ps(j, _mm512_set1_ps(kLn2Low), r);
    // p(r) = 1 + r + r²·(c0 + c1·r + c2·r²), fitted for the least maximum relative error on |r| ≤ ln 2 / 2.
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0.041277189f), r, _mm512_set1_ps(0.16753466f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.50005114f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    const __m512i exponent = _mm512_slli_epi32(_mm512_castps_si512(shifted), 23);
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), exponent));
}

// A row's whole vectors and its tail's mask, and the argument scale·(s − max s) of each vector as
// one fused multiply-add from s: what the exponentiations of a row share.
struct Arguments {
    int64_t whole;
    __mmask16 tail;
    __m512 scale16, shift16;

    Arguments(const float *s, int64_t n, float scale) : whole(n / 16 * 16), tail(__mmask16((1u << (n - whole)) - 1)) {
        __m512 top16 = _mm512_set1_ps(-INFINITY);
        for (int64_t i = 0; i < whole; i += 16) top16 = _mm512_max_ps(top16, _mm512_loadu_ps(s + i));
        if (tail) top16 = _mm512_max_ps(top16, _mm512_mask_loadu_ps(top16, tail, s + whole));
        scale16 = _mm512_set1_ps(scale);
        shift16 = _mm512_set1_ps(-scale * _mm512_reduce_max_ps(top16));
    }
    __m512 at(const float *s, int64_t i) const { return _mm512_fmadd_ps(_mm512_loadu_ps(s + i), scale16, shift16); }
    __m512 of_tail(const float *s) const {
        return _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, s + whole), scale16, shift16);
    }
};

} // namespace

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) float
exponentiate_to_bf16_avx512(float *s, int64_t n, float scale, uint16_t *out) {
    const Arguments row(s, n, scale);
    __m512 sum16 = _mm512_setzero_ps();
    for (int64_t i = 0; i < row.whole; i += 16) {
        const __m512 e = coarse_exp_lanes(row.at(s, i));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), __m256i(_mm512_cvtneps_pbh(e)));
        sum16 = _mm512_add_ps(sum16, e);
    }
    if (row.tail) {
        const __m512 e = coarse_exp_lanes(row.of_tail(s));
        _mm256_mask_storeu_epi16(out + row.whole, row.tail, __m256i(_mm512_cvtneps_pbh(e)));
        sum16 = _mm512_mask_add_ps(sum16, row.tail, sum16, e);
    }
    return _mm512_reduce_add_ps(sum16);
}

// Whole vectors go through plain loads and stores, the tail through masked ones (7 % faster on the
// Zen 5 VM than masking every vector); every element takes the same exp_lanes, and the sum the same
// order of additions, either way.
float exponentiate_avx512(float *s, int64_t n, float scale) {
    const Arguments row(s, n, scale);
    __m512 sum16 = _mm512_setzero_ps();
    for (int64_t i = 0; i < row.whole; i += 16) {
        const __m512 e = exp_lanes(row.at(s, i));
        _mm512_storeu_ps(s + i, e);
        sum16 = _mm512_add_ps(sum16, e);
    }
    if (row.tail) {
        const __m512 e = exp_lanes(row.of_tail(s));
        _mm512_mask_storeu_ps(s + row.whole, row.tail, e);
        sum16 = _mm512_mask_add_ps(sum16, row.tail, sum16, e);
    }
    return _mm512_reduce_add_ps(sum16);
}

} // namespace chatterbox::kernels
