// Built with AVX2, FMA and F16C (CMakeLists.txt); called only where the CPU has them. Nothing here is
// shared with other files (no inline function or template of a common header is instantiated), so
// no AVX2 copy of common code can reach a CPU without it.
//
// The AVX-512 VNNI kernels' scheme on 256-bit registers without VNNI: a register holds one half of a
// tile (8 columns × 4 K); `vpmaddubsw` multiplies it into a row's broadcast activations as 16-bit
// pair sums, which a sub-block adds up in 16 bits (8 steps × 2 × 15 × 127 < 2^15: exact) before one
// `vpmaddwd` scales them by the sub-block's 6-bit scale into 32 bits. Every integer sum is the same
// as the VNNI kernels', and the f32 steps are the same operations in the same order, so the two give
// the same bits.
#include "kernels/int8_tiles_loads.h"
#include "kernels/q4k_kernels.h"

#include <immintrin.h>

namespace chatterbox::kernels::q4k {

namespace {

using int8_tiles::load_f32;
using int8_tiles::load_i32;

__m256i load_256(const uint8_t *p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)); }
__m128i load_128(const uint8_t *p) { return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)); }

constexpr int64_t kHalf = kColumns / 2;

// Block b of H tile halves (tiles[i / 2], columns 8 (i % 2) ..) times rows[0 .. R), added to their
// totals (R × 16 f32 per tile).
template <int R, int H>
void halves_pass(const uint8_t *const *tiles, int first_half, int64_t b, const uint8_t *const *rows, int64_t k,
                 float *const *totals) {
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
    const uint8_t *tile[H];
    int64_t half[H];
    for (int i = 0; i < H; ++i) {
        tile[i] = tiles[(first_half + i) / 2];
        half[i] = (first_half + i) % 2;
    }
    __m256i scaled[H][R];
    for (int i = 0; i < H; ++i)
        for (int r = 0; r < R; ++r) scaled[i][r] = _mm256_setzero_si256();
    for (int64_t j = 0; j < kSubBlocks; ++j) {
        __m256i part[H][R];
        for (int i = 0; i < H; ++i)
            for (int r = 0; r < R; ++r) part[i][r] = _mm256_setzero_si256();
        for (int64_t c = 4 * j; c < 4 * j + 4; ++c) {
            __m256i bytes[H];
            for (int i = 0; i < H; ++i) bytes[i] = load_256(tile[i] + kQuantsOffset + c * 64 + half[i] * 32);
            for (int nibble = 0; nibble < 2; ++nibble) {
                __m256i weights[H];
                for (int i = 0; i < H; ++i)
                    weights[i] = _mm256_and_si256(nibble ? _mm256_srli_epi16(bytes[i], 4) : bytes[i], low_nibbles);
                const int64_t at = b * kBlock + c * 8 + nibble * 4;
                for (int r = 0; r < R; ++r) {
                    const __m256i a = _mm256_set1_epi32(load_i32(rows[r] + at));
                    for (int i = 0; i < H; ++i) {
                        part[i][r] = _mm256_add_epi16(part[i][r], _mm256_maddubs_epi16(weights[i], a));
                        // The empty asm keeps the adds in this order: GCC otherwise adds the two
                        // nibbles' products together first, which holds more registers, and kept five
                        // of a 4-row pass's eight totals on the stack (1.1x slower in cache;
                        // bench/history/2026-12-03-q4k-avx2-zen3.md).
                        __asm__("" : "+x"(part[i][r]));
                    }
                }
            }
        }
        for (int i = 0; i < H; ++i) {
            const __m256i scale = _mm256_cvtepu8_epi32(
                _mm_loadl_epi64(reinterpret_cast<const __m128i *>(tile[i] + kScalesOffset + 16 * j + half[i] * 8)));
            const __m256i scale_pairs = _mm256_or_si256(scale, _mm256_slli_epi32(scale, 16));
            for (int r = 0; r < R; ++r)
                scaled[i][r] = _mm256_add_epi32(scaled[i][r], _mm256_madd_epi16(part[i][r], scale_pairs));
        }
    }
    for (int i = 0; i < H; ++i) {
        __m256i mins[kSubBlocks / 2];
        for (int64_t p = 0; p < kSubBlocks / 2; ++p)
            mins[p] = _mm256_cvtepu8_epi16(load_128(tile[i] + kMinsOffset + 32 * p + half[i] * 16));
        const __m256 d = _mm256_cvtph_ps(load_128(tile[i] + kDOffset + half[i] * 16));
        const __m256 dmin = _mm256_cvtph_ps(load_128(tile[i] + kDminOffset + half[i] * 16));
        for (int r = 0; r < R; ++r) {
            const uint8_t *sums = rows[r] + k + (k / kBlock) * 4 + b * kSubBlocks * 2;
            __m256i min_sum = _mm256_setzero_si256();
            for (int64_t p = 0; p < kSubBlocks / 2; ++p)
                min_sum =
                    _mm256_add_epi32(min_sum, _mm256_madd_epi16(mins[p], _mm256_set1_epi32(load_i32(sums + 4 * p))));
            const __m256 da = _mm256_set1_ps(load_f32(rows[r] + k + b * 4));
            float *out = totals[(first_half + i) / 2] + r * kColumns + half[i] * kHalf;
            __m256 total = _mm256_loadu_ps(out);
            total = _mm256_fmadd_ps(_mm256_cvtepi32_ps(scaled[i][r]), _mm256_mul_ps(d, da), total);
            total = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(min_sum), _mm256_mul_ps(dmin, da), total);
            _mm256_storeu_ps(out, total);
        }
    }
}

// G tiles, as their 2G halves two at a time.
template <int R, int G>
void pass(const uint8_t *const *tiles, int64_t b, const uint8_t *const *rows, int64_t k, float *const *totals) {
    for (int first = 0; first < 2 * G; first += 2) halves_pass<R, 2>(tiles, first, b, rows, k, totals);
}

constexpr int64_t kAvx2RowsPerPass = 4;

constexpr Kernels kAvx2 = {
    kAvx2RowsPerPass,
    {{pass<1, 1>, pass<2, 1>, pass<3, 1>, pass<4, 1>}, {pass<1, 2>, pass<2, 2>, pass<3, 2>, pass<4, 2>}},
};

} // namespace

const Kernels &avx2_kernels() { return kAvx2; }

} // namespace chatterbox::kernels::q4k
