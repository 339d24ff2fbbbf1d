// Built with AVX2, FMA and F16C (CMakeLists.txt); called only where the CPU has them (every CPU that
// runs either instruction set of the int8 tile kernels). Nothing here is shared with other files (no
// inline function or template of a common header is instantiated), so no AVX2 copy of common code can
// reach a CPU without it.
//
// The activations' quantisation of each weight format, for the passes of either set: q = nearest(x ·
// 127 / max|x|), ties to even, over a q4_K block of 256 values or a q8_0 block of 32.
#include "kernels/q4k_kernels.h"
#include "kernels/q8_0_kernels.h"

#include <immintrin.h>

#include <cstring>

namespace chatterbox::kernels {

namespace {

float absolute_max(const float *v, int64_t n) {
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 top = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) top = _mm256_max_ps(top, _mm256_and_ps(_mm256_loadu_ps(v + i), magnitude));
    __m128 top4 = _mm_max_ps(_mm256_castps256_ps128(top), _mm256_extractf128_ps(top, 1));
    top4 = _mm_max_ps(top4, _mm_movehl_ps(top4, top4));
    return _mm_cvtss_f32(_mm_max_ss(top4, _mm_movehdup_ps(top4)));
}

// n values (a multiple of 8) of x · multiplier rounded into out as int8; returns their sum.
int32_t quantize_values(const float *x, int64_t n, __m256 multiplier, uint8_t *out) {
    __m256i sum = _mm256_setzero_si256();
    for (int64_t h = 0; h < n; h += 8) {
        __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + h), multiplier));
        q = _mm256_max_epi32(_mm256_min_epi32(q, _mm256_set1_epi32(127)), _mm256_set1_epi32(-127));
        const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i *>(out + h), _mm_packs_epi16(words, words));
        sum = _mm256_add_epi32(sum, q);
    }
    __m128i sum4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    sum4 = _mm_add_epi32(sum4, _mm_shuffle_epi32(sum4, 0x4E));
    sum4 = _mm_add_epi32(sum4, _mm_shuffle_epi32(sum4, 0xB1));
    return _mm_cvtsi128_si32(sum4);
}

} // namespace

void q4k::quantize_row(const float *row, int64_t k, uint8_t *o) {
    const int64_t blocks = k / kBlock;
    for (int64_t b = 0; b < blocks; ++b) {
        const float amax = absolute_max(row + b * kBlock, kBlock);
        // As ggml's q8_K: scale 1 / (127 / max|x|).
        const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
        const float scale = amax > 0.0f ? 1.0f / inverse : 0.0f;
        std::memcpy(o + k + b * 4, &scale, sizeof scale);
        const __m256 multiplier = _mm256_set1_ps(inverse);
        for (int64_t j = 0; j < kSubBlocks; ++j) {
            const int64_t at = b * kBlock + j * 32;
            const auto sub_sum = static_cast<int16_t>(quantize_values(row + at, 32, multiplier, o + at));
            std::memcpy(o + k + blocks * 4 + (b * kSubBlocks + j) * 2, &sub_sum, sizeof sub_sum);
        }
    }
}

void q8_0::quantize_row(const float *row, int64_t k, uint8_t *o) {
    const int64_t sub_blocks = k / kSubBlock;
    for (int64_t s = 0; s < sub_blocks; ++s) {
        const int64_t at = s * kSubBlock;
        const float amax = absolute_max(row + at, kSubBlock);
        // As ggml's q8_0 (its AVX2 quantize_row_q8_0): the scale max|x|/127 stored in f16.
        const float scale = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));
        std::memcpy(o + k + s * 4, &scale, sizeof scale);
        const __m256 multiplier = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
        const int32_t offset = 128 * quantize_values(row + at, kSubBlock, multiplier, o + at);
        std::memcpy(o + k + sub_blocks * 4 + s * 4, &offset, sizeof offset);
    }
}

} // namespace chatterbox::kernels
