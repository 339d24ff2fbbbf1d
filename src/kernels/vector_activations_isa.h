#pragma once
// Internal to kernels/vector_activations.cpp: the element-wise loops of each instruction set (each
// built alone with its flags: vector_activations_avx2.cpp, vector_activations_avx512.cpp; called only
// on a CPU that has it), over plain pointers. Both sets run the same operations on each element with
// SLEEF's deterministic ("finz") functions, which give the same bits in every vector width where FMA
// is used: an element's result does not depend on the set.

#include <cstdint>

namespace chatterbox::kernels::activations {

// The vector width all sets split work by (floats): a thread's share starts on a multiple of it.
constexpr int64_t kSplitLanes = 16;

struct Isa {
    // y[i] = f(x[i]) for i in [0, n) (y may be x); a partial vector goes through a zero-padded one.
    void (*gelu_erf)(const float *x, float *y, int64_t n);
    void (*gelu_tanh)(const float *x, float *y, int64_t n);
    void (*mish)(const float *x, float *y, int64_t n);
    // y[i] = x[i] + inv_alpha·sin²(alpha·x[i]): one channel's row of Snake.
    void (*snake)(const float *x, float *y, int64_t n, float alpha, float inv_alpha);
};
const Isa &avx2_isa();   // AVX2 and FMA
const Isa &avx512_isa(); // AVX-512F (and FMA)

} // namespace chatterbox::kernels::activations
