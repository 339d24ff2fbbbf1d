// Built with AVX-512F and FMA (CMakeLists.txt); called only where the CPU has AVX-512F.
#include "kernels/vector_activations_lanes.h"

#include <immintrin.h>
#include <sleef.h>

namespace chatterbox::kernels::activations {

namespace {

struct Avx512 {
    using Reg = __m512;
    static constexpr int64_t kLanes = 16;
    static Reg set(float v) { return _mm512_set1_ps(v); }
    static Reg load(const float *p) { return _mm512_loadu_ps(p); }
    static void store(float *p, Reg v) { _mm512_storeu_ps(p, v); }
    static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
    static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
    static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
    static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
    static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
    // Bitwise operations on floats through the integer forms (AVX-512F; the float ones are DQ's).
    static Reg bit_xor(Reg a, Reg b) {
        return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
    }
    static Reg sign_of(Reg x) {
        return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
    }
    static Reg select_greater(Reg a, Reg b, Reg then, Reg otherwise) {
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), otherwise, then);
    }
    static Reg exp(Reg x) { return Sleef_finz_expf16_u10avx512f(x); }
    static Reg log1p(Reg x) { return Sleef_finz_log1pf16_u10avx512f(x); }
    static Reg tanh(Reg x) { return Sleef_finz_tanhf16_u10avx512f(x); }
    static Reg sin(Reg x) { return Sleef_finz_sinf16_u10avx512f(x); }
};

constexpr Isa kAvx512 = isa_of<Avx512>();

} // namespace

const Isa &avx512_isa() { return kAvx512; }

} // namespace chatterbox::kernels::activations
