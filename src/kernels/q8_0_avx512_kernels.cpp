// Built with AVX-512 F/BW/VL/DQ, VNNI and F16C (CMakeLists.txt); called only where
// int8_isa_runs(). Nothing here is shared with other files (no inline function or template of
// a common header is instantiated), so no AVX-512 copy of common code can reach a CPU without it.
#include "kernels/int8_tiles_loads.h"
#include "kernels/q8_0_kernels.h"

#include <immintrin.h>

namespace chatterbox::kernels::q8_0 {

namespace {

using int8_tiles::load_f32;
using int8_tiles::load_i32;

// Block b of G column groups (tiles[g]) times rows[0 .. R), added to totals[g] (R × 16 f32 each).
// Each chunk of 4 values × 16 columns is loaded once and multiplied into every row (vpdpbusd: the
// weights offset by 128 as u8, the activations s8); a sub-block's sum less the row's 128·Σq is the
// exact Σ w·q, which takes d·d_a in f32, sub-block after sub-block.
template <int R, int G>
void pass(const uint8_t *const *tiles, int64_t b, const uint8_t *const *rows, int64_t k, float *const *totals) {
    const int64_t sub_blocks = k / kSubBlock;
    __m512 total[G][R];
    for (int g = 0; g < G; ++g)
        for (int r = 0; r < R; ++r) total[g][r] = _mm512_load_ps(totals[g] + r * kColumns);
    for (int64_t j = 0; j < kSubBlocks; ++j) {
        __m512i part[G][R];
        for (int g = 0; g < G; ++g)
            for (int r = 0; r < R; ++r) part[g][r] = _mm512_setzero_si512();
        for (int64_t c = 8 * j; c < 8 * j + 8; ++c) {
            __m512i weights[G];
            for (int g = 0; g < G; ++g) weights[g] = _mm512_load_si512(tiles[g] + kQuantsOffset + c * 64);
            for (int r = 0; r < R; ++r) {
                const __m512i a = _mm512_set1_epi32(load_i32(rows[r] + b * kBlock + c * 4));
                for (int g = 0; g < G; ++g) part[g][r] = _mm512_dpbusd_epi32(part[g][r], weights[g], a);
            }
        }
        __m512 d[G];
        for (int g = 0; g < G; ++g)
            d[g] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i *>(tiles[g] + kDOffset + 32 * j)));
        const int64_t s = b * kSubBlocks + j;
        for (int r = 0; r < R; ++r) {
            const __m512i offset = _mm512_set1_epi32(load_i32(rows[r] + k + sub_blocks * 4 + s * 4));
            const __m512 da = _mm512_set1_ps(load_f32(rows[r] + k + s * 4));
            for (int g = 0; g < G; ++g)
                total[g][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(part[g][r], offset)),
                                              _mm512_mul_ps(d[g], da), total[g][r]);
        }
    }
    for (int g = 0; g < G; ++g)
        for (int r = 0; r < R; ++r) _mm512_store_ps(totals[g] + r * kColumns, total[g][r]);
}

constexpr Kernels kAvx512Vnni = {
    kRowsPerPass,
    {{pass<1, 1>, pass<2, 1>, pass<3, 1>, pass<4, 1>}, {pass<1, 2>, pass<2, 2>, pass<3, 2>, pass<4, 2>}},
};

} // namespace

const Kernels &avx512_vnni_kernels() { return kAvx512Vnni; }

} // namespace chatterbox::kernels::q8_0
