#include "modules/matmul.h"

#include "kernels/onednn.h"
#include "kernels/q4k.h"

namespace chatterbox::nn {

ggml_tensor *matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x, MatmulRoute route) {
    if (route == MatmulRoute::onednn && weight->type == GGML_TYPE_F32) return kernels::onednn_matmul(ctx, weight, x);
    if (ggml_tensor *y = kernels::q4k_matmul(ctx, weight, x)) return y;
    return product(ctx, weight, x);
}

ggml_tensor *product(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b) {
    ggml_tensor *y = ggml_mul_mat(ctx, a, b);
    ggml_mul_mat_set_prec(y, GGML_PREC_F32);
    return y;
}

} // namespace chatterbox::nn
