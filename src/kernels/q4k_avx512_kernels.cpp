// Built with AVX-512 F/BW/VL/DQ, VNNI and F16C (CMakeLists.txt); called only where
// int8_isa_runs(). Nothing here is shared with other files (no inline function or template of
// a common header is instantiated: hence no std::min or std::fill), so no AVX-512 copy of common
// code can reach a CPU without it.
#include "kernels/int8_tiles_loads.h"
#include "kernels/q4k_kernels.h"

#include <immintrin.h>

namespace chatterbox::kernels::q4k {

namespace {

using int8_tiles::load_f32;
using int8_tiles::load_i32;

// Block b of G column groups (tiles[g]) times rows[0 .. R), added to totals[g] (R × 16 f32 each).
// Each quant chunk is unpacked once and multiplied into every row, each row's activation broadcast
// once for all G groups (vpdpbusd: 4 u8 weights × 4 s8 activations per int32 lane; two groups halve
// the broadcasts, which bound a one-group pass); each sub-block's sums are scaled by its 6-bit scale;
// the mins meet the activation's sub-block sums (vpdpwssd); the total then takes
// d·d_a·Σ − dmin·d_a·Σmin.
template <int R, int G>
void pass(const uint8_t *const *tiles, int64_t b, const uint8_t *const *rows, int64_t k, float *const *totals) {
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    __m512i scaled[G][R];
    for (int g = 0; g < G; ++g)
        for (int r = 0; r < R; ++r) scaled[g][r] = _mm512_setzero_si512();
    for (int64_t j = 0; j < kSubBlocks; ++j) {
        __m512i part[G][R];
        for (int g = 0; g < G; ++g)
            for (int r = 0; r < R; ++r) part[g][r] = _mm512_setzero_si512();
        for (int64_t c = 4 * j; c < 4 * j + 4; ++c) {
            __m512i bytes[G];
            for (int g = 0; g < G; ++g) bytes[g] = _mm512_load_si512(tiles[g] + kQuantsOffset + c * 64);
            for (int nibble = 0; nibble < 2; ++nibble) {
                __m512i weights[G];
                for (int g = 0; g < G; ++g)
                    weights[g] = _mm512_and_si512(nibble ? _mm512_srli_epi16(bytes[g], 4) : bytes[g], low_nibbles);
                const int64_t at = b * kBlock + c * 8 + nibble * 4;
                for (int r = 0; r < R; ++r) {
                    const __m512i a = _mm512_set1_epi32(load_i32(rows[r] + at));
                    for (int g = 0; g < G; ++g) part[g][r] = _mm512_dpbusd_epi32(part[g][r], weights[g], a);
                }
            }
        }
        for (int g = 0; g < G; ++g) {
            const __m512i scale = _mm512_cvtepu8_epi32(
                _mm_load_si128(reinterpret_cast<const __m128i *>(tiles[g] + kScalesOffset + 16 * j)));
            for (int r = 0; r < R; ++r)
                scaled[g][r] = _mm512_add_epi32(scaled[g][r], _mm512_mullo_epi32(part[g][r], scale));
        }
    }
    for (int g = 0; g < G; ++g) {
        const uint8_t *tile = tiles[g];
        __m512i mins[kSubBlocks / 2];
        for (int64_t p = 0; p < kSubBlocks / 2; ++p)
            mins[p] =
                _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i *>(tile + kMinsOffset + 32 * p)));
        const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i *>(tile + kDOffset)));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i *>(tile + kDminOffset)));
        for (int r = 0; r < R; ++r) {
            const uint8_t *sums = rows[r] + k + (k / kBlock) * 4 + b * kSubBlocks * 2;
            __m512i min_sum = _mm512_setzero_si512();
            for (int64_t p = 0; p < kSubBlocks / 2; ++p)
                min_sum = _mm512_dpwssd_epi32(min_sum, mins[p], _mm512_set1_epi32(load_i32(sums + 4 * p)));
            const __m512 da = _mm512_set1_ps(load_f32(rows[r] + k + b * 4));
            float *out = totals[g] + r * kColumns;
            __m512 total = _mm512_load_ps(out);
            total = _mm512_fmadd_ps(_mm512_cvtepi32_ps(scaled[g][r]), _mm512_mul_ps(d, da), total);
            total = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(min_sum), _mm512_mul_ps(dmin, da), total);
            _mm512_store_ps(out, total);
        }
    }
}

constexpr Kernels kAvx512Vnni = {
    kMaxRowsPerPass,
    {{pass<1, 1>, pass<2, 1>, pass<3, 1>, pass<4, 1>, pass<5, 1>, pass<6, 1>, pass<7, 1>, pass<8, 1>},
     {pass<1, 2>, pass<2, 2>, pass<3, 2>, pass<4, 2>, pass<5, 2>, pass<6, 2>, pass<7, 2>, pass<8, 2>}},
};

} // namespace

const Kernels &avx512_vnni_kernels() { return kAvx512Vnni; }

} // namespace chatterbox::kernels::q4k
