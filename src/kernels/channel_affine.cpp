#include "kernels/channel_affine.h"

#include "core/error.h"

namespace chatterbox::kernels {

namespace {

// userdata: whether ReLU follows (the address of one of these, so that it stays valid).
const bool kRelu = true, kNoRelu = false;

void affine_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    const bool relu = *static_cast<const bool *>(userdata);
    const ggml_tensor *x = dst->src[0];
    const float *scale = static_cast<const float *>(dst->src[1]->data);
    const float *shift = static_cast<const float *>(dst->src[2]->data);
    const int64_t frames = x->ne[0], channels = x->ne[1], rows = channels * x->ne[2] * x->ne[3];
    for (int64_t row = rows * ith / nth; row < rows * (ith + 1) / nth; ++row) {
        const float *in = static_cast<const float *>(x->data) + row * frames;
        float *out = static_cast<float *>(dst->data) + row * frames;
        const float s = scale[row % channels], h = shift[row % channels];
        for (int64_t t = 0; t < frames; ++t) {
            const float scaled = in[t] * s; // rounded before the add, as ggml_mul then ggml_add
            const float y = scaled + h;
            out[t] = relu && !(y > 0.0f) ? 0.0f : y;
        }
    }
}

} // namespace

ggml_tensor *channel_affine(ggml_context *ctx, ggml_tensor *x, ggml_tensor *scale, ggml_tensor *shift, bool relu) {
    if (x->type != GGML_TYPE_F32) fail("channel_affine: x must be f32, got ", ggml_type_name(x->type));
    for (const ggml_tensor *t : {scale, shift})
        if (!t || t->type != GGML_TYPE_F32 || ggml_nelements(t) != x->ne[1] || !ggml_is_contiguous(t))
            fail("channel_affine: scale and shift must be contiguous f32 [", x->ne[1], "]");
    ggml_tensor *args[] = {ggml_is_contiguous(x) ? x : ggml_cont(ctx, x), scale, shift};
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 3, affine_op,
                                    GGML_N_TASKS_MAX, const_cast<bool *>(relu ? &kRelu : &kNoRelu));
    return ggml_set_name(y, "channel_affine");
}

} // namespace chatterbox::kernels
