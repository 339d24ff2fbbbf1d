#include "kernels/vector_activations.h"

#include "core/error.h"

#include <cstdint>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <sleef.h>
#define CHATTERBOX_VECTOR_ACTIVATIONS 1
#endif

namespace chatterbox::kernels {

#ifdef CHATTERBOX_VECTOR_ACTIVATIONS
namespace {

constexpr int64_t kLanes = 8;

// erf(x) = sign(x)·(1 − t·P(t)·exp(−x²)), t = 1/(1 + 0.3275911·|x|): Abramowitz and Stegun 7.1.26
// (|error| < 1.5e-7), the form PyTorch's vectorised CPU erf takes; about a third of the cost of
// SLEEF's 1-ulp erf, which was slower than the C library's scalar one here.
__m256 erf_lanes(__m256 x) {
    const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    const __m256 magnitude = _mm256_xor_ps(x, sign);
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), magnitude, one));
    __m256 poly = _mm256_fmadd_ps(_mm256_set1_ps(1.061405429f), t, _mm256_set1_ps(-1.453152027f));
    poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(1.421413741f));
    poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(-0.284496736f));
    poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(0.254829592f));
    const __m256 gaussian = Sleef_expf8_u10avx2(_mm256_xor_ps(_mm256_mul_ps(x, x), _mm256_set1_ps(-0.0f)));
    const __m256 tail = _mm256_mul_ps(_mm256_mul_ps(gaussian, t), poly);
    return _mm256_xor_ps(_mm256_sub_ps(one, tail), sign);
}

__m256 gelu_erf_lanes(__m256 x) {
    const __m256 half_x = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
    const __m256 erf = erf_lanes(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752440f)));
    return _mm256_mul_ps(half_x, _mm256_add_ps(_mm256_set1_ps(1.0f), erf));
}

// 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))), GPT-2's gelu_new, with SLEEF's 1-ulp tanh.
__m256 gelu_tanh_lanes(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 cubic = _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), _mm256_mul_ps(x, x), one);
    const __m256 inner = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.79788456080286535588f), x), cubic);
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(one, Sleef_tanhf8_u10avx2(inner)));
}

__m256 mish_lanes(__m256 x) {
    const __m256 softplus = _mm256_blendv_ps(Sleef_log1pf8_u10avx2(Sleef_expf8_u10avx2(x)), x,
                                             _mm256_cmp_ps(x, _mm256_set1_ps(20.0f), _CMP_GT_OQ));
    return _mm256_mul_ps(x, Sleef_tanhf8_u10avx2(softplus));
}

// y[i] = f(x[i]) for i in [begin, end), a partial vector through a zero-padded one.
template <class F> void map(const float *x, float *y, int64_t begin, int64_t end, F f) {
    int64_t i = begin;
    for (; i + kLanes <= end; i += kLanes) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
    if (i == end) return;
    alignas(32) float lanes[kLanes] = {};
    std::memcpy(lanes, x + i, size_t(end - i) * sizeof(float));
    _mm256_store_ps(lanes, f(_mm256_load_ps(lanes)));
    std::memcpy(y + i, lanes, size_t(end - i) * sizeof(float));
}

// Each thread a contiguous range of whole vectors of the (contiguous) tensor.
template <__m256 (*F)(__m256)> void map_op(ggml_tensor *dst, const ggml_tensor *x, int ith, int nth, void *) {
    const int64_t n = ggml_nelements(dst), vectors = (n + kLanes - 1) / kLanes;
    const int64_t begin = vectors * ith / nth * kLanes, end = vectors * (ith + 1) / nth * kLanes;
    map(static_cast<const float *>(x->data), static_cast<float *>(dst->data), begin, end < n ? end : n, F);
}

// Each thread a contiguous range of rows (T values of one channel).
void snake_op(ggml_tensor *dst, const ggml_tensor *x, const ggml_tensor *alpha, const ggml_tensor *inv_alpha, int ith,
              int nth, void *) {
    const int64_t length = x->ne[0], channels = x->ne[1], rows = ggml_nrows(x);
    const auto *a = static_cast<const float *>(alpha->data);
    const auto *inv = static_cast<const float *>(inv_alpha->data);
    for (int64_t row = rows * ith / nth; row < rows * (ith + 1) / nth; ++row) {
        const __m256 scale = _mm256_set1_ps(a[row % channels]), weight = _mm256_set1_ps(inv[row % channels]);
        map(static_cast<const float *>(x->data) + row * length, static_cast<float *>(dst->data) + row * length, 0,
            length, [&](__m256 v) {
                const __m256 s = Sleef_sinf8_u10avx2(_mm256_mul_ps(v, scale));
                return _mm256_fmadd_ps(_mm256_mul_ps(s, s), weight, v);
            });
    }
}

ggml_tensor *map_node(ggml_context *ctx, ggml_tensor *x, ggml_custom1_op_t op, const char *name) {
    if (x->type != GGML_TYPE_F32) return nullptr;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor *y = ggml_map_custom1(ctx, x, op, GGML_N_TASKS_MAX, nullptr);
    return ggml_set_name(y, name);
}

} // namespace

bool vector_activations_available() { return true; }
ggml_tensor *gelu_erf(ggml_context *ctx, ggml_tensor *x) {
    return map_node(ctx, x, map_op<gelu_erf_lanes>, "gelu_erf.avx2");
}
ggml_tensor *gelu_tanh(ggml_context *ctx, ggml_tensor *x) {
    return map_node(ctx, x, map_op<gelu_tanh_lanes>, "gelu_tanh.avx2");
}
ggml_tensor *mish(ggml_context *ctx, ggml_tensor *x) { return map_node(ctx, x, map_op<mish_lanes>, "mish.avx2"); }
// Through lambdas, so that map inlines the lanes (a function pointer would be called per vector).
void gelu_erf_in_place(float *values, int64_t count) {
    map(values, values, 0, count, [](__m256 x) { return gelu_erf_lanes(x); });
}
void gelu_tanh_in_place(float *values, int64_t count) {
    map(values, values, 0, count, [](__m256 x) { return gelu_tanh_lanes(x); });
}
ggml_tensor *snake(ggml_context *ctx, ggml_tensor *x, ggml_tensor *alpha, ggml_tensor *inv_alpha) {
    if (x->type != GGML_TYPE_F32 || alpha->type != GGML_TYPE_F32 || inv_alpha->type != GGML_TYPE_F32) return nullptr;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    return ggml_set_name(ggml_map_custom3(ctx, x, alpha, inv_alpha, snake_op, GGML_N_TASKS_MAX, nullptr),
                         "snake.avx2");
}
#else
bool vector_activations_available() { return false; }
ggml_tensor *gelu_erf(ggml_context *, ggml_tensor *) { return nullptr; }
ggml_tensor *gelu_tanh(ggml_context *, ggml_tensor *) { return nullptr; }
ggml_tensor *mish(ggml_context *, ggml_tensor *) { return nullptr; }
void gelu_erf_in_place(float *, int64_t) { fail("vector activations: not built for this CPU"); }
void gelu_tanh_in_place(float *, int64_t) { fail("vector activations: not built for this CPU"); }
ggml_tensor *snake(ggml_context *, ggml_tensor *, ggml_tensor *, ggml_tensor *) { return nullptr; }
#endif

} // namespace chatterbox::kernels
