#include "models/chatterbox/s3gen/frame_conv.h"

#include "core/error.h"
#include "kernels/pad_frames.h"
#include "modules/matmul.h"

namespace chatterbox::s3gen {

FrameConv1d::FrameConv1d(ModuleWeights &w, const std::string &prefix, int64_t in_, int64_t out_, int kernel_,
                         int pad_left_, int pad_right_)
    : in(in_), out(out_), kernel(kernel_), pad_left(pad_left_), pad_right(pad_right_) {
    if (in <= 0 || out <= 0 || kernel <= 0 || pad_left < 0 || pad_right < 0)
        fail("FrameConv1d ", prefix, ": bad configuration (in ", in, ", out ", out, ", kernel ", kernel, ", padding ",
             pad_left, "/", pad_right, ")");
    const std::string name = prefix + ".weight";
    const Shape shape{out, in, kernel}, flattened{out, in * kernel};
    if (kernel > 1 && w.on_cpu()) {
        // (C_out, C_in, K) -> (C_out, K, C_in): the column of output frame t is then input frames
        // t − pad_left .. t − pad_left + K − 1 one after another, a window of the frame-major input.
        const TensorView *stored = w.stored(name);
        const std::vector<float> values = w.host_f32(name, stored && stored->shape == flattened ? flattened : shape);
        // In the stored type where reordering keeps it exact (a quantised one's blocks would change).
        const ggml_type type =
            stored && (stored->type == GGML_TYPE_F16 || stored->type == GGML_TYPE_BF16) ? stored->type : GGML_TYPE_F32;
        std::vector<float> by_tap(values.size());
        for (int64_t o = 0; o < out; ++o)
            for (int64_t i = 0; i < in; ++i)
                for (int64_t k = 0; k < kernel; ++k)
                    by_tap[size_t((o * kernel + k) * in + i)] = values[size_t((o * in + i) * kernel + k)];
        weight = w.derived(prefix + ".weight_by_tap", flattened, std::move(by_tap), WeightUse::matmul, type);
        windows = true;
    } else {
        weight = w.get_matrix(name, shape);
    }
    bias = w.get(prefix + ".bias", {out}, WeightUse::f32);
}

ggml_tensor *FrameConv1d::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (!weight) fail("FrameConv1d used before it was bound");
    if (x->type != GGML_TYPE_F32 || x->ne[0] != in || x->ne[3] != 1)
        fail("FrameConv1d ", ggml_get_name(weight), ": input must be f32 ggml [", in, ", T, B], got ",
             ggml_type_name(x->type), " [", x->ne[0], ", ", x->ne[1], ", ", x->ne[2], ", ", x->ne[3], "]");
    const int64_t frames = x->ne[1];
    const int64_t out_frames = frames + pad_left + pad_right - kernel + 1;
    if (out_frames <= 0)
        fail("FrameConv1d ", ggml_get_name(weight), ": ", frames, " frames are fewer than the kernel (", kernel,
             ") needs");
    if (windows) {
        // The padded input's windows of K frames, one frame apart: ggml [K*C_in, out_frames, B], row
        // index k*C_in + c, read in place by the product.
        ggml_tensor *padded = pad_left > 0 || pad_right > 0 || !ggml_is_contiguous(x)
                                  ? kernels::pad_frames(ctx, x, pad_left, pad_right)
                                  : x;
        // ggml_view checks a view's size as if it were contiguous, which overlapping rows are not:
        // made one frame wide, then widened to K frames (its true extent ends with the padded input).
        ggml_tensor *columns =
            ggml_view_3d(ctx, padded, in, out_frames, padded->ne[2], padded->nb[1], padded->nb[2], 0);
        columns->ne[0] = kernel * in;
        return nn::matmul(ctx, weight, columns, bias);
    }
    ggml_tensor *columns = x; // ggml [K*C_in, out_frames, B], row index c*K + k (PyTorch's weight order)
    if (kernel > 1 || pad_left > 0 || pad_right > 0) {
        // One pass gives the padded time-major copy im2col reads (ggml's pad reads strided sources);
        // the columns stay contiguous, which keeps the matrix product on the fast GEMM path.
        ggml_tensor *time_major = ggml_transpose(ctx, x); // view ggml [T, C_in, B]
        time_major = pad_left > 0 || pad_right > 0
                         ? ggml_pad_ext(ctx, time_major, pad_left, pad_right, 0, 0, 0, 0, 0, 0)
                         : ggml_cont(ctx, time_major);
        // im2col reads only the kernel's shape (K, C_in) from its first argument.
        ggml_tensor *shape = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, kernel, in);
        columns = ggml_im2col(ctx, shape, time_major, 1, 0, 0, 0, 1, 0, false, GGML_TYPE_F32);
    }
    return nn::matmul(ctx, weight, columns, bias);
}

} // namespace chatterbox::s3gen
