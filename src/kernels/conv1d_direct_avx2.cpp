// The direct convolution's tiles in AVX2: 4 channels × 3 vectors of 8 outputs (12 ymm
// accumulators). Built with -mavx2 -mfma (every x86 build of ggml needs AVX2).

#include "kernels/conv1d_direct_tile.h"

#include <immintrin.h>

namespace chatterbox::kernels::conv1d {
namespace {

struct Avx2 {
    using Reg = __m256;
    using Mask = __m256i;
    static constexpr int64_t kLanes = 8;
    static constexpr int kRows = 4;
    static constexpr int kVectors = 3;
    static Reg zero() { return _mm256_setzero_ps(); }
    static Reg load(const float *p) { return _mm256_loadu_ps(p); }
    static Reg load_masked(const float *p, Mask m) { return _mm256_maskload_ps(p, m); }
    static void store(float *p, Reg v) { _mm256_storeu_ps(p, v); }
    static void store_masked(float *p, Reg v, Mask m) { _mm256_maskstore_ps(p, m, v); }
    static Reg broadcast(const float *p) { return _mm256_broadcast_ss(p); }
    static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
    static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
    static Mask tail_mask(int64_t lanes) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(lanes)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
};

} // namespace

namespace {
constexpr Isa kIsa{Avx2::kVectors * Avx2::kLanes,
                   tile<Avx2>}; // constant-initialised: no code runs before CPUID is checked
} // namespace

const Isa &avx2_isa() { return kIsa; }

} // namespace chatterbox::kernels::conv1d
