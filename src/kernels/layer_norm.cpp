#include "kernels/layer_norm.h"

#include "core/error.h"
#include "kernels/exp_polynomial.h"
#include "kernels/interned.h"
#include "kernels/tensor_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>

namespace chatterbox::kernels {

namespace {

using namespace exp_polynomial;

// What a node carries to its op (interned, so that the address stays valid).
struct NormParams {
    float eps;
    AfterNorm after;
    bool operator<(const NormParams &o) const { return std::tie(eps, after) < std::tie(o.eps, o.after); }
};

constexpr int64_t kLanes = 16; // partial sums: one AVX-512 vector, two AVX2 ones

// Written as plain loops over lanes for the compiler to vectorise in each clone (the lanes of a
// partial sum are independent, so no reassociation is needed).
inline float row_sum(const float *x, int64_t n, float shift, bool squares) {
    float partial[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int64_t l = 0; l < kLanes; ++l) {
            const float v = x[i + l] - shift;
            partial[l] += squares ? v * v : v;
        }
    for (int64_t l = 0; i < n; ++i, ++l) {
        const float v = x[i] - shift;
        partial[l] += squares ? v * v : v;
    }
    float sum = 0.0f;
    for (int64_t l = 0; l < kLanes; ++l) sum += partial[l];
    return sum;
}

// tanh(softplus(x)) = ((1 + eˣ)² − 1) / ((1 + eˣ)² + 1) = q / (q + 2), q = eˣ(eˣ + 2): one exponential
// where softplus and tanh take three transcendental functions. eˣ is 2^j·p(r) (exp_polynomial.h),
// j rounded to nearest by adding and subtracting 1.5·2²³ (vectorises where a round call may not).
inline float mish_of(float x) {
    const float clamped = x > 20.0f ? 20.0f : x < kLowest ? kLowest : x; // not std::fmin: a call, no vector
    const float j = (clamped * kLog2e + 12582912.0f) - 12582912.0f;
    float r = std::fma(-j, kLn2High, clamped);
    r = std::fma(-j, kLn2Low, r);
    // Horner's rule written out: a loop over the coefficients keeps the compiler from vectorising.
    float p = std::fma(kCoefficients[0], r, kCoefficients[1]);
    p = std::fma(p, r, kCoefficients[2]);
    p = std::fma(p, r, kCoefficients[3]);
    p = std::fma(p, r, kCoefficients[4]);
    p = std::fma(p, r, kCoefficients[5]);
    p = std::fma(p, r * r, r + 1.0f);
    const uint32_t bits = uint32_t(int32_t(j) + 127) << 23;
    float power;
    std::memcpy(&power, &bits, sizeof power);
    const float e = p * power, q = e * (e + 2.0f);
    const float tanh_softplus = q / (q + 2.0f); // computed for every lane: a conditional one is not vectorised
    return x > 20.0f ? x : x * tanh_softplus;   // softplus(x) = x above 20, as PyTorch's
}

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void
normalise_rows(const float *x, int64_t x_stride, float *y, int64_t rows, int64_t n, const float *weight,
               const float *bias, float eps, bool mish) {
    for (int64_t row = 0; row < rows; ++row, x += x_stride, y += n) {
        const float mean = row_sum(x, n, 0.0f, false) / float(n);
        const float inverse_std = 1.0f / std::sqrt(row_sum(x, n, mean, true) / float(n) + eps);
        if (weight)
            for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inverse_std * weight[i] + bias[i];
        else
            for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inverse_std;
        if (mish)
            for (int64_t i = 0; i < n; ++i) y[i] = mish_of(y[i]);
    }
}

// Each thread a contiguous range of rows.
void norm_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    const NormParams &params = *static_cast<const NormParams *>(userdata);
    const ggml_tensor *x = dst->src[0], *weight = dst->src[1], *bias = dst->src[2];
    const int64_t n = x->ne[0], rows = ggml_nrows(x), first = rows * ith / nth, end = rows * (ith + 1) / nth;
    // Rows of a contiguous-rowed x, possibly strided between them: walk them by their indices.
    for (int64_t row = first; row < end;) {
        const int64_t run = std::min(end - row, x->ne[1] - row % x->ne[1]); // rows one nb[1] apart
        const auto *in = reinterpret_cast<const float *>(row_address(x, row));
        normalise_rows(in, int64_t(x->nb[1] / sizeof(float)), static_cast<float *>(dst->data) + row * n, run, n,
                       weight ? static_cast<const float *>(weight->data) : nullptr,
                       bias ? static_cast<const float *>(bias->data) : nullptr, params.eps,
                       params.after == AfterNorm::mish);
        row += run;
    }
}

} // namespace

float mish_value(float x) { return mish_of(x); }

ggml_tensor *layer_norm(ggml_context *ctx, ggml_tensor *x, ggml_tensor *weight, ggml_tensor *bias, float eps,
                        AfterNorm after) {
    if (x->type != GGML_TYPE_F32) fail("layer_norm: x must be f32, got ", ggml_type_name(x->type));
    if (!weight != !bias) fail("layer_norm: a weight and a bias, or neither");
    for (const ggml_tensor *t : {weight, bias})
        if (t && (t->type != GGML_TYPE_F32 || ggml_nelements(t) != x->ne[0] || !ggml_is_contiguous(t)))
            fail("layer_norm: weight and bias must be contiguous f32 [", x->ne[0], "]");
    if (x->nb[0] != sizeof(float) || x->nb[1] % sizeof(float) != 0) x = ggml_cont(ctx, x);
    ggml_tensor *args[] = {x, weight, bias};
    ggml_tensor *y =
        ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, weight ? 3 : 1, norm_op,
                       GGML_N_TASKS_MAX, const_cast<NormParams *>(interned(NormParams{eps, after})));
    return ggml_set_name(y, after == AfterNorm::mish ? "layer_norm.mish" : "layer_norm");
}

} // namespace chatterbox::kernels
