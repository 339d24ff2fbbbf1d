#pragma once
// The numerators of a softmax over one row of scores, in place: s[0..n) -> exp(scale·(s − max s)),
// returning their sum (the blocked attention's middle pass, kernels/onednn.h). Variants by
// instruction set, one file each; exponentiate() takes the widest the CPU has (CPUID at run time:
// the project's own code is built for any x86-64). Every variant keeps |relative error| below 1e-6.

#include <cstdint>

namespace chatterbox::kernels {

float exponentiate(float *s, int64_t n, float scale);

// The variants, for tests; the vector ones only on x86-64, where the CPU has their instructions.
float exponentiate_scalar(float *s, int64_t n, float scale);
float exponentiate_avx2(float *s, int64_t n, float scale);   // AVX2 + FMA
float exponentiate_avx512(float *s, int64_t n, float scale); // AVX-512F

} // namespace chatterbox::kernels
