// Built with AVX-512 F/BW/VL and BF16 (CMakeLists.txt); called only where bf16_attention::runs_here().
// Nothing here is shared with other files (no inline function or template of a common header is
// instantiated), so no AVX-512 copy of common code can reach a CPU without it.
#include "kernels/bf16_attention.h"

#include <immintrin.h>

#include <cstring>

namespace chatterbox::kernels::bf16_attention {

namespace {

constexpr int kRows = 6;            // query rows of a register block
constexpr int kKeyRegisters = 4;    // key blocks of a register block of scores (6 × 4 sums)
constexpr int kMaxDimRegisters = 4; // 64 dimensions of output (6 × 4 sums)

__m256i to_bf16(__m512 x) { return __m256i(_mm512_cvtneps_pbh(x)); }

// Two bf16 values (one 32-bit lane) broadcast to every lane.
__m512bh pair_at(const uint16_t *p) {
    int32_t bits;
    std::memcpy(&bits, p, sizeof bits);
    return __m512bh(_mm512_set1_epi32(bits));
}

__m512bh packed_at(const uint16_t *p) { return __m512bh(_mm512_loadu_si512(p)); }

// Rows [r0, r0 + R) × key blocks [b0, b0 + C) of the scores.
template <int R, int C>
void score_block(const uint16_t *q, int64_t d, const uint16_t *keys, int64_t r0, int64_t b0, float *s,
                 int64_t s_stride) {
    __m512 sums[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) sums[r][c] = _mm512_setzero_ps();
    const int64_t pairs = d / 2;
    for (int64_t p = 0; p < pairs; ++p) {
        __m512bh k[C];
        for (int c = 0; c < C; ++c) k[c] = packed_at(keys + ((b0 + c) * pairs + p) * 2 * kKeyBlock);
        for (int r = 0; r < R; ++r) {
            const __m512bh pair = pair_at(q + (r0 + r) * d + 2 * p);
            for (int c = 0; c < C; ++c) sums[r][c] = _mm512_dpbf16_ps(sums[r][c], pair, k[c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) _mm512_storeu_ps(s + (r0 + r) * s_stride + (b0 + c) * kKeyBlock, sums[r][c]);
}

template <int R>
void score_rows(const uint16_t *q, int64_t d, const uint16_t *keys, int64_t blocks, int64_t r0, float *s,
                int64_t s_stride) {
    int64_t b = 0;
    for (; b + kKeyRegisters <= blocks; b += kKeyRegisters)
        score_block<R, kKeyRegisters>(q, d, keys, r0, b, s, s_stride);
    switch (blocks - b) {
    case 3:
        return score_block<R, 3>(q, d, keys, r0, b, s, s_stride);
    case 2:
        return score_block<R, 2>(q, d, keys, r0, b, s, s_stride);
    case 1:
        return score_block<R, 1>(q, d, keys, r0, b, s, s_stride);
    default:
        return;
    }
}

// Rows [r0, r0 + R) of the output, G registers (16 dimensions each) wide.
template <int R, int G>
void value_block(const uint16_t *p, int64_t p_stride, const uint16_t *values, int64_t pairs, const float *inverse,
                 int64_t r0, float *out, int64_t out_stride) {
    __m512 sums[R][G];
    for (int r = 0; r < R; ++r)
        for (int g = 0; g < G; ++g) sums[r][g] = _mm512_setzero_ps();
    for (int64_t j = 0; j < pairs; ++j) {
        __m512bh v[G];
        for (int g = 0; g < G; ++g) v[g] = packed_at(values + (j * G + g) * 32);
        for (int r = 0; r < R; ++r) {
            const __m512bh pair = pair_at(p + (r0 + r) * p_stride + 2 * j);
            for (int g = 0; g < G; ++g) sums[r][g] = _mm512_dpbf16_ps(sums[r][g], pair, v[g]);
        }
    }
    for (int r = 0; r < R; ++r) {
        const __m512 scale = _mm512_set1_ps(inverse[r0 + r]);
        for (int g = 0; g < G; ++g)
            _mm512_storeu_ps(out + (r0 + r) * out_stride + 16 * g, _mm512_mul_ps(sums[r][g], scale));
    }
}

template <int G>
void value_rows(const uint16_t *p, int64_t rows, int64_t p_stride, const uint16_t *values, int64_t pairs,
                const float *inverse, float *out, int64_t out_stride) {
    int64_t r = 0;
    for (; r + kRows <= rows; r += kRows)
        value_block<kRows, G>(p, p_stride, values, pairs, inverse, r, out, out_stride);
    switch (rows - r) {
    case 5:
        return value_block<5, G>(p, p_stride, values, pairs, inverse, r, out, out_stride);
    case 4:
        return value_block<4, G>(p, p_stride, values, pairs, inverse, r, out, out_stride);
    case 3:
        return value_block<3, G>(p, p_stride, values, pairs, inverse, r, out, out_stride);
    case 2:
        return value_block<2, G>(p, p_stride, values, pairs, inverse, r, out, out_stride);
    case 1:
        return value_block<1, G>(p, p_stride, values, pairs, inverse, r, out, out_stride);
    default:
        return;
    }
}

} // namespace

void pack_keys(const float *k, int64_t n_kv, int64_t d, int64_t stride, uint16_t *out) {
    const int64_t pairs = d / 2;
    std::memset(out, 0, size_t(packed_keys_size(n_kv, d)) * sizeof(uint16_t));
    alignas(64) uint16_t row[kMaxDimRegisters * 16];
    for (int64_t j = 0; j < n_kv; ++j) {
        for (int64_t i = 0; i < d; i += 16)
            _mm256_store_si256(reinterpret_cast<__m256i *>(row + i), to_bf16(_mm512_loadu_ps(k + j * stride + i)));
        // Key j's pair p is lane j % 16 of register (j / 16, p).
        auto *lanes = reinterpret_cast<uint32_t *>(out) + (j / kKeyBlock) * pairs * kKeyBlock + j % kKeyBlock;
        for (int64_t p = 0; p < pairs; ++p) std::memcpy(lanes + p * kKeyBlock, row + 2 * p, sizeof(uint32_t));
    }
}

void pack_values(const float *v, int64_t n_kv, int64_t d, int64_t stride, uint16_t *out) {
    const int64_t groups = d / 16;
    // Lane 2i takes a[i], lane 2i + 1 takes b[i] (b's values at indices 32 and up).
    alignas(64) uint16_t order[32];
    for (int i = 0; i < 16; ++i) {
        order[2 * i] = uint16_t(i);
        order[2 * i + 1] = uint16_t(32 + i);
    }
    const __m512i interleave = _mm512_load_si512(order);
    for (int64_t j = 0; j < n_kv; j += 2)
        for (int64_t g = 0; g < groups; ++g) {
            const __m512i a = _mm512_castsi256_si512(to_bf16(_mm512_loadu_ps(v + j * stride + 16 * g)));
            const __m512i b = j + 1 < n_kv
                                  ? _mm512_castsi256_si512(to_bf16(_mm512_loadu_ps(v + (j + 1) * stride + 16 * g)))
                                  : _mm512_setzero_si512();
            _mm512_storeu_si512(out + (j / 2 * groups + g) * 32, _mm512_permutex2var_epi16(a, interleave, b));
        }
}

void scores(const uint16_t *q, int64_t rows, int64_t d, const uint16_t *keys, int64_t n_kv, float *s) {
    const int64_t s_stride = score_stride(n_kv), blocks = s_stride / kKeyBlock;
    int64_t r = 0;
    for (; r + kRows <= rows; r += kRows) score_rows<kRows>(q, d, keys, blocks, r, s, s_stride);
    switch (rows - r) {
    case 5:
        return score_rows<5>(q, d, keys, blocks, r, s, s_stride);
    case 4:
        return score_rows<4>(q, d, keys, blocks, r, s, s_stride);
    case 3:
        return score_rows<3>(q, d, keys, blocks, r, s, s_stride);
    case 2:
        return score_rows<2>(q, d, keys, blocks, r, s, s_stride);
    case 1:
        return score_rows<1>(q, d, keys, blocks, r, s, s_stride);
    default:
        return;
    }
}

void weighted_values(const uint16_t *p, int64_t rows, const uint16_t *values, int64_t n_kv, int64_t d,
                     const float *inverse, float *out, int64_t out_stride) {
    const int64_t p_stride = probability_stride(n_kv), pairs = p_stride / 2;
    switch (d / 16) {
    case 4:
        return value_rows<4>(p, rows, p_stride, values, pairs, inverse, out, out_stride);
    case 3:
        return value_rows<3>(p, rows, p_stride, values, pairs, inverse, out, out_stride);
    case 2:
        return value_rows<2>(p, rows, p_stride, values, pairs, inverse, out, out_stride);
    case 1:
        return value_rows<1>(p, rows, p_stride, values, pairs, inverse, out, out_stride);
    default:
        return;
    }
}

} // namespace chatterbox::kernels::bf16_attention
