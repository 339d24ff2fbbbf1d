// Built with AVX2, FMA and F16C (CMakeLists.txt); called only where the CPU has them. Nothing here is
// shared with other files (no inline function or template of a common header is instantiated), so
// no AVX2 copy of common code can reach a CPU without it.
//
// The AVX-512 VNNI kernels' sums on 256-bit registers without VNNI: a register holds one half of a
// chunk (8 columns × 4 values); the weight's sign moves onto the activation (`vpsignb`) so that
// `vpmaddubsw` multiplies |w| by ±q into 16-bit pair sums (at most 2 · 128 · 127 < 2^15: exact),
// which `vpmaddwd` adds into 32 bits. Every integer sum is the AVX-512 kernels' Σ w·q, and the f32
// steps are the same operations in the same order, so the two give the same bits.
#include "kernels/int8_tiles_loads.h"
#include "kernels/q8_0_kernels.h"

#include <immintrin.h>

namespace chatterbox::kernels::q8_0 {

namespace {

using int8_tiles::load_f32;
using int8_tiles::load_i32;

constexpr int64_t kHalf = kColumns / 2;

// Block b of columns 8·half .. of one tile times rows[0 .. R), added to their totals (R × 16 f32).
template <int R>
void half_pass(const uint8_t *tile, int64_t half, int64_t b, const uint8_t *const *rows, int64_t k, float *totals) {
    const __m256i sign_bit = _mm256_set1_epi8(char(0x80)), ones = _mm256_set1_epi16(1);
    __m256 total[R];
    for (int r = 0; r < R; ++r) total[r] = _mm256_loadu_ps(totals + r * kColumns + half * kHalf);
    for (int64_t j = 0; j < kSubBlocks; ++j) {
        __m256i part[R];
        for (int r = 0; r < R; ++r) part[r] = _mm256_setzero_si256();
        for (int64_t c = 8 * j; c < 8 * j + 8; ++c) {
            const __m256i weights = _mm256_xor_si256(
                _mm256_loadu_si256(reinterpret_cast<const __m256i *>(tile + kQuantsOffset + c * 64 + half * 32)),
                sign_bit);
            const __m256i magnitudes = _mm256_abs_epi8(weights);
            for (int r = 0; r < R; ++r) {
                const __m256i a = _mm256_set1_epi32(load_i32(rows[r] + b * kBlock + c * 4));
                const __m256i pairs = _mm256_maddubs_epi16(magnitudes, _mm256_sign_epi8(a, weights));
                part[r] = _mm256_add_epi32(part[r], _mm256_madd_epi16(pairs, ones));
            }
        }
        const __m256 d =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(tile + kDOffset + 32 * j + half * 16)));
        const int64_t s = b * kSubBlocks + j;
        for (int r = 0; r < R; ++r) {
            const __m256 da = _mm256_set1_ps(load_f32(rows[r] + k + s * 4));
            total[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(part[r]), _mm256_mul_ps(d, da), total[r]);
        }
    }
    for (int r = 0; r < R; ++r) _mm256_storeu_ps(totals + r * kColumns + half * kHalf, total[r]);
}

// G tiles, half by half.
template <int R, int G>
void pass(const uint8_t *const *tiles, int64_t b, const uint8_t *const *rows, int64_t k, float *const *totals) {
    for (int i = 0; i < 2 * G; ++i) half_pass<R>(tiles[i / 2], i % 2, b, rows, k, totals[i / 2]);
}

constexpr Kernels kAvx2 = {
    kRowsPerPass,
    {{pass<1, 1>, pass<2, 1>, pass<3, 1>, pass<4, 1>}, {pass<1, 2>, pass<2, 2>, pass<3, 2>, pass<4, 2>}},
};

} // namespace

const Kernels &avx2_kernels() { return kAvx2; }

} // namespace chatterbox::kernels::q8_0
