#pragma once
// Internal to the vector_activations_<isa>.cpp files: the activations over a vector type V (one
// instruction set), included by each file under its own flags. Everything here has internal linkage
// (an anonymous namespace, no inline function of a shared header), so each file keeps its own copy.
// Every element takes the same sequence of IEEE operations and SLEEF calls in any width.

#include "kernels/vector_activations_isa.h"

#include <cstring>

namespace chatterbox::kernels::activations {
namespace {

// erf(x) = sign(x)·(1 − t·P(t)·exp(−x²)), t = 1/(1 + 0.3275911·|x|): Abramowitz and Stegun 7.1.26
// (|error| < 1.5e-7), the form PyTorch's vectorised CPU erf takes; about a third of the cost of
// SLEEF's 1-ulp erf, which was slower than the C library's scalar one here.
template <class V> typename V::Reg erf_lanes(typename V::Reg x) {
    using R = typename V::Reg;
    const R sign = V::sign_of(x);
    const R magnitude = V::bit_xor(x, sign);
    const R one = V::set(1.0f);
    const R t = V::div(one, V::fma(V::set(0.3275911f), magnitude, one));
    R poly = V::fma(V::set(1.061405429f), t, V::set(-1.453152027f));
    poly = V::fma(poly, t, V::set(1.421413741f));
    poly = V::fma(poly, t, V::set(-0.284496736f));
    poly = V::fma(poly, t, V::set(0.254829592f));
    const R gaussian = V::exp(V::bit_xor(V::mul(x, x), V::set(-0.0f)));
    const R tail = V::mul(V::mul(gaussian, t), poly);
    return V::bit_xor(V::sub(one, tail), sign);
}

template <class V> typename V::Reg gelu_erf_lanes(typename V::Reg x) {
    const typename V::Reg half_x = V::mul(V::set(0.5f), x);
    const typename V::Reg erf = erf_lanes<V>(V::mul(x, V::set(0.70710678118654752440f)));
    return V::mul(half_x, V::add(V::set(1.0f), erf));
}

// 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))), GPT-2's gelu_new, with SLEEF's 1-ulp tanh.
template <class V> typename V::Reg gelu_tanh_lanes(typename V::Reg x) {
    using R = typename V::Reg;
    const R one = V::set(1.0f);
    const R cubic = V::fma(V::set(0.044715f), V::mul(x, x), one);
    const R inner = V::mul(V::mul(V::set(0.79788456080286535588f), x), cubic);
    return V::mul(V::mul(V::set(0.5f), x), V::add(one, V::tanh(inner)));
}

// x·tanh(softplus(x)), softplus(x) = log1p(exp(x)), or x above 20 (ggml_softplus's threshold).
template <class V> typename V::Reg mish_lanes(typename V::Reg x) {
    const typename V::Reg softplus = V::select_greater(x, V::set(20.0f), x, V::log1p(V::exp(x)));
    return V::mul(x, V::tanh(softplus));
}

// y[i] = f(x[i]) for i in [0, n), a partial vector through a zero-padded one.
template <class V, class F> void map(const float *x, float *y, int64_t n, F f) {
    int64_t i = 0;
    for (; i + V::kLanes <= n; i += V::kLanes) V::store(y + i, f(V::load(x + i)));
    if (i == n) return;
    alignas(64) float lanes[V::kLanes] = {};
    std::memcpy(lanes, x + i, size_t(n - i) * sizeof(float));
    V::store(lanes, f(V::load(lanes)));
    std::memcpy(y + i, lanes, size_t(n - i) * sizeof(float));
}

// Through lambdas, so that map inlines the lanes (a function pointer would be called per vector).
template <class V> void gelu_erf(const float *x, float *y, int64_t n) {
    map<V>(x, y, n, [](typename V::Reg v) { return gelu_erf_lanes<V>(v); });
}
template <class V> void gelu_tanh(const float *x, float *y, int64_t n) {
    map<V>(x, y, n, [](typename V::Reg v) { return gelu_tanh_lanes<V>(v); });
}
template <class V> void mish(const float *x, float *y, int64_t n) {
    map<V>(x, y, n, [](typename V::Reg v) { return mish_lanes<V>(v); });
}
template <class V> void snake(const float *x, float *y, int64_t n, float alpha, float inv_alpha) {
    const typename V::Reg scale = V::set(alpha), weight = V::set(inv_alpha);
    map<V>(x, y, n, [&](typename V::Reg v) {
        const typename V::Reg s = V::sin(V::mul(v, scale));
        return V::fma(V::mul(s, s), weight, v);
    });
}

template <class V> constexpr Isa isa_of() { return {gelu_erf<V>, gelu_tanh<V>, mish<V>, snake<V>}; }

} // namespace
} // namespace chatterbox::kernels::activations
