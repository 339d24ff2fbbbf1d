#pragma once
// GELU (erf and tanh forms), Mish and Snake over f32 tensors as ggml custom ops for the CPU backend,
// in the widest of AVX-512F and AVX2 the CPU has (kernels/vector_activations_isa.h): Mish and GELU
// (tanh) through SLEEF's vector exp, log1p and tanh (1 ulp), GELU (erf) through a polynomial erf
// (|error| < 1.5e-7) and SLEEF's exp, Snake through SLEEF's sine. ggml 0.22 computes them element by
// element with the C library's scalar erff, expf, log1pf and tanhf: 7.7 % and 4.7 % of a CFM on the
// Intel VM (bench/history/2026-12-03-flow-speedups-intel.md, "Blocked attention by default").
// AVX-512's 16 lanes halve the cost of SLEEF's tanh and sine on the Zen 5 VM (GELU (tanh) was ~8 % of
// Turbo's T3 prefill in AVX2).
//
// Each element goes through the same vector code whatever its place (a tail is padded to a whole
// vector, and SLEEF's lanes are independent), so its result does not depend on the tensor's shape,
// on the rows beside it or on how the threads split the work: a batched request gets the bits it
// gets alone. SLEEF's deterministic functions make it the same bits in either set, too.

#include "ggml.h"

#include <cstdint>

namespace chatterbox::kernels {

// Whether this build has them (x86-64, where every build needs AVX2 for ggml); where not, the
// functions below return nullptr and the caller takes ggml's op.
bool vector_activations_available();

// 0.5·x·(1 + erf(x/√2)), the expression of ggml_gelu_erf (PyTorch's exact GELU); x f32 of any
// shape (made contiguous if it is not). Returns a new f32 tensor of x's shape.
ggml_tensor *gelu_erf(ggml_context *ctx, ggml_tensor *x);

// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), the expression of nn::gelu_tanh (GPT-2's gelu_new):
// one node instead of ggml's seven, and a vector tanh instead of the C library's scalar tanhf
// (Turbo's T3 prefill 519 -> 319 ms on the Zen 5 VM, bench/history/2026-12-06-zen5-gpt2-gelu-prefill-claims.md).
ggml_tensor *gelu_tanh(ggml_context *ctx, ggml_tensor *x);

// gelu_erf's and gelu_tanh's values (the same bits) written over `count` values in place: for a
// product's epilogue (kernels/q4k.cpp). Only where vector_activations_available().
void gelu_erf_in_place(float *values, int64_t count);
void gelu_tanh_in_place(float *values, int64_t count);

// x·tanh(softplus(x)) with softplus(x) = log1p(exp(x)), or x above 20 (ggml_softplus's threshold,
// as PyTorch's): what nn::mish builds from ggml ops.
ggml_tensor *mish(ggml_context *ctx, ggml_tensor *x);

// Snake with a per-channel alpha, in one pass: y = x + inv_alpha[c]·sin²(alpha[c]·x) for x f32 ggml
// [T, C, B] (made contiguous if it is not), alpha and inv_alpha f32 [C]; SLEEF's 1-ulp sine. ggml's
// five ops (mul, sin, sqr, mul, add) take the C library's scalar sinf and five passes over x.
ggml_tensor *snake(ggml_context *ctx, ggml_tensor *x, ggml_tensor *alpha, ggml_tensor *inv_alpha);

} // namespace chatterbox::kernels
