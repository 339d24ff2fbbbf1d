#pragma once
// The numerators of a softmax over one row of scores, in place: s[0..n) -> exp(scale·(s − max s)),
// returning their sum (the blocked attention's middle pass, kernels/onednn.h). Variants by
// instruction set, one file each; exponentiate() takes the widest the CPU has (CPUID at run time:
// the project's own code is built for any x86-64). Every variant of exponentiate keeps |relative
// error| below 1e-6.

#include <cstdint>

namespace chatterbox::kernels {

float exponentiate(float *s, int64_t n, float scale);

// The same numerators rounded to bf16 (ties to even) into out[0..n), for the bf16 attention, which
// multiplies them in bf16: one pass instead of exponentiate and a rounding pass, and on AVX-512 BF16 a
// shorter polynomial (|relative error| < 1e-5 before the rounding, far below bf16's 2^-9), 1.35×
// faster on the Zen 5 VM. Returns the sum of the numerators before the rounding; s is left changed.
float exponentiate_to_bf16(float *s, int64_t n, float scale, uint16_t *out);

// The variants, for tests; the vector ones only on x86-64, where the CPU has their instructions.
float exponentiate_scalar(float *s, int64_t n, float scale);
float exponentiate_avx2(float *s, int64_t n, float scale);   // AVX2 + FMA
float exponentiate_avx512(float *s, int64_t n, float scale); // AVX-512F
float exponentiate_to_bf16_scalar(float *s, int64_t n, float scale, uint16_t *out);
float exponentiate_to_bf16_avx512(float *s, int64_t n, float scale, uint16_t *out); // AVX-512F and BF16

} // namespace chatterbox::kernels
