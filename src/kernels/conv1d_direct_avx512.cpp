// The direct convolution's tiles in AVX-512F: 4 channels × 6 vectors of 16 outputs (24 zmm
// accumulators; each broadcast weight meets 96 outputs, where 8 × 3 had it meet 48: HiFT 1.12-1.24 ->
// 1.08-1.19 s for 10 s of audio on the Zen 5 VM, `vocoder-batch`, three interleaved rounds). Built
// with -mavx512f -mfma; called only where CPUID has AVX-512F.

#include "kernels/conv1d_direct_tile.h"

#include <immintrin.h>

namespace chatterbox::kernels::conv1d {
namespace {

struct Avx512 {
    using Reg = __m512;
    using Mask = __mmask16;
    static constexpr int64_t kLanes = 16;
    static constexpr int kRows = 4;
    static constexpr int kVectors = 6;
    static Reg zero() { return _mm512_setzero_ps(); }
    static Reg load(const float *p) { return _mm512_loadu_ps(p); }
    static Reg load_masked(const float *p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
    static void store(float *p, Reg v) { _mm512_storeu_ps(p, v); }
    static void store_masked(float *p, Reg v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
    static Reg broadcast(const float *p) { return _mm512_set1_ps(*p); }
    static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
    static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
    static Mask tail_mask(int64_t lanes) { return Mask((1u << lanes) - 1u); }
};

} // namespace

namespace {
constexpr Isa kIsa{Avx512::kVectors * Avx512::kLanes,
                   tile<Avx512>}; // constant-initialised: no code runs before CPUID is checked
} // namespace

const Isa &avx512_isa() { return kIsa; }

} // namespace chatterbox::kernels::conv1d
