// Built with AVX2 and FMA (CMakeLists.txt); called only where the CPU has them.
#include "kernels/vector_activations_lanes.h"

#include <immintrin.h>
#include <sleef.h>

namespace chatterbox::kernels::activations {

namespace {

struct Avx2 {
    using Reg = __m256;
    static constexpr int64_t kLanes = 8;
    static Reg set(float v) { return _mm256_set1_ps(v); }
    static Reg load(const float *p) { return _mm256_loadu_ps(p); }
    static void store(float *p, Reg v) { _mm256_storeu_ps(p, v); }
    static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
    static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
    static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
    static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
    static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
    static Reg bit_xor(Reg a, Reg b) { return _mm256_xor_ps(a, b); }
    static Reg sign_of(Reg x) { return _mm256_and_ps(x, _mm256_set1_ps(-0.0f)); }
    // a > b ? then : otherwise
    static Reg select_greater(Reg a, Reg b, Reg then, Reg otherwise) {
        return _mm256_blendv_ps(otherwise, then, _mm256_cmp_ps(a, b, _CMP_GT_OQ));
    }
    static Reg exp(Reg x) { return Sleef_finz_expf8_u10avx2(x); }
    static Reg log1p(Reg x) { return Sleef_finz_log1pf8_u10avx2(x); }
    static Reg tanh(Reg x) { return Sleef_finz_tanhf8_u10avx2(x); }
    static Reg sin(Reg x) { return Sleef_finz_sinf8_u10avx2(x); }
};

constexpr Isa kAvx2 = isa_of<Avx2>();

} // namespace

const Isa &avx2_isa() { return kAvx2; }

} // namespace chatterbox::kernels::activations
