#pragma once
// ggml's own repacked layouts of quantised weights on the CPU (its CPU_REPACK buffer type: q4_0,
// q4_K, iq4_nl ... interleaved for its AVX2 / AVX-512 gemv and gemm), as a matmul kernel: a weight it
// takes is placed in that buffer and ggml_mul_mat multiplies it there; nothing is packed beside it.

#include "kernels/matmul_kernel.h"

namespace chatterbox::kernels {

const MatmulKernel &ggml_repack_kernel(); // "ggml_repack"

} // namespace chatterbox::kernels
