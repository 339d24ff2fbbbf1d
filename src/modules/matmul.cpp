#include "modules/matmul.h"

#include "kernels/matmul_kernel.h"

namespace chatterbox::nn {

ggml_tensor *matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x) {
    if (const kernels::PackedWeight *packed = kernels::packed_of(weight)) return packed->product(ctx, weight, x);
    if (x->nb[1] < x->ne[0] * x->nb[0]) x = ggml_cont(ctx, x); // overlapping rows: one copy for ggml_mul_mat
    return product(ctx, weight, x);
}

ggml_tensor *matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x, ggml_tensor *bias) {
    if (!bias) return matmul(ctx, weight, x);
    if (ggml_tensor *y = fused_matmul(ctx, weight, x, kernels::Epilogue{bias})) return y;
    return ggml_add(ctx, matmul(ctx, weight, x), bias);
}

ggml_tensor *fused_matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x, const kernels::Epilogue &epilogue) {
    const kernels::PackedWeight *packed = kernels::packed_of(weight);
    return packed ? packed->product_with(ctx, weight, x, epilogue) : nullptr;
}

ggml_tensor *product(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b) {
    ggml_tensor *y = ggml_mul_mat(ctx, a, b);
    ggml_mul_mat_set_prec(y, GGML_PREC_F32);
    return y;
}

} // namespace chatterbox::nn
