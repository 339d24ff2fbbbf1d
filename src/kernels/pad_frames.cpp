#include "kernels/pad_frames.h"

#include "core/error.h"
#include "kernels/interned.h"

#include <cstring>
#include <tuple>

namespace chatterbox::kernels {

namespace {

struct Padding {
    int left, right;
    bool operator<(const Padding &o) const { return std::tie(left, right) < std::tie(o.left, o.right); }
};

// Each thread a contiguous range of the output's frames.
void pad_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    const Padding &padding = *static_cast<const Padding *>(userdata);
    const ggml_tensor *x = dst->src[0];
    const int64_t frames = dst->ne[1], rows = frames * dst->ne[2];
    const size_t row_bytes = dst->nb[1];
    for (int64_t row = rows * ith / nth; row < rows * (ith + 1) / nth; ++row) {
        const int64_t t = row % frames - padding.left, b = row / frames;
        char *out = static_cast<char *>(dst->data) + row * row_bytes;
        if (t < 0 || t >= x->ne[1])
            std::memset(out, 0, row_bytes);
        else
            std::memcpy(out, static_cast<const char *>(x->data) + t * x->nb[1] + b * x->nb[2], row_bytes);
    }
}

} // namespace

ggml_tensor *pad_frames(ggml_context *ctx, ggml_tensor *x, int left, int right) {
    if (x->type != GGML_TYPE_F32 || x->ne[3] != 1 || left < 0 || right < 0)
        fail("pad_frames: needs f32 ggml [C, T, B] and padding of 0 or more frames, got ", ggml_type_name(x->type),
             " [", x->ne[0], ", ", x->ne[1], ", ", x->ne[2], ", ", x->ne[3], "] and ", left, "/", right);
    if (x->nb[0] != sizeof(float)) x = ggml_cont(ctx, x);
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], left + x->ne[1] + right, x->ne[2], 1, &x, 1, pad_op,
                                    GGML_N_TASKS_MAX, const_cast<Padding *>(interned(Padding{left, right})));
    return ggml_set_name(y, "pad_frames");
}

} // namespace chatterbox::kernels
