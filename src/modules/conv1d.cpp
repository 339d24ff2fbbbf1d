#include "modules/conv1d.h"

#include "core/error.h"
#include "kernels/depthwise_conv1d.h"
#include "modules/matmul.h"
#include "modules/weight_norm.h"

namespace chatterbox::nn {

Conv1d::Conv1d(ModuleWeights &w, const std::string &prefix, int64_t in_, int64_t out_, int kernel_,
               const ConvOptions &options_)
    : in(in_), out(out_), kernel(kernel_), options(options_), on_cpu(w.on_cpu()) {
    ConvOptions &o = options;
    if (in <= 0 || out <= 0 || kernel <= 0 || o.stride <= 0 || o.dilation <= 0 || o.pad_left < 0 || o.pad_right < 0)
        fail("Conv1d ", prefix, ": bad configuration (in ", in, ", out ", out, ", kernel ", kernel, ", stride ",
             o.stride, ", dilation ", o.dilation, ", padding ", o.pad_left, "/", o.pad_right, ")");
    if (o.output_padding != 0) fail("Conv1d ", prefix, ": output_padding applies to ConvTranspose1d only");
    if (o.groups != 1 && !(o.groups == in && out == in))
        fail("Conv1d ", prefix, ": groups ", o.groups, " with ", in, " -> ", out,
             " channels is not supported (only 1, or depthwise: groups = in = out)");
    if (o.causal) {
        if (o.pad_left != 0 || o.pad_right != 0) fail("Conv1d ", prefix, ": causal padding and explicit padding");
        o.pad_left = o.dilation * (kernel - 1);
    }

    // The depthwise and direct kernels read the plain f32 kernel (in
    // its stored form: (out, in, kernel) or flattened, the same bytes); the others are the matrix
    // (out, in·kernel).
    if (!depthwise() && o.stride == 1) direct = w.conv_kernel();
    const Shape shape = {out, depthwise() ? 1 : in, kernel};
    const WeightUse use = depthwise() || direct ? WeightUse::f32 : WeightUse::matmul;
    const std::string name = prefix + ".weight";
    if (o.weight_norm) {
        weight = weight_norm(w, prefix, shape, 0, use);
    } else if (direct) {
        const TensorView *stored = w.stored(name);
        const Shape flattened{out, in * kernel};
        weight = w.get(name, stored && stored->shape == flattened ? flattened : shape, use);
    } else {
        weight = depthwise() ? w.get(name, shape, use) : w.get_matrix(name, shape);
    }
    if (o.bias) bias = w.get(prefix + ".bias", {out}, WeightUse::f32);
}

int64_t Conv1d::output_length(int64_t input_length) const {
    const int64_t span = int64_t(options.dilation) * (kernel - 1) + 1;
    const int64_t padded = input_length + options.pad_left + options.pad_right;
    return padded < span ? 0 : (padded - span) / options.stride + 1;
}

ggml_tensor *Conv1d::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (!weight) fail("Conv1d used before it was bound");
    const char *name = ggml_get_name(weight);
    if (x->type != GGML_TYPE_F32 || x->ne[1] != in || x->ne[3] != 1)
        fail("Conv1d ", name, ": input must be f32 ggml [T, ", in, ", B], got ", ggml_type_name(x->type), " [",
             x->ne[0], ", ", x->ne[1], ", ", x->ne[2], ", ", x->ne[3], "]");
    const int64_t length = output_length(x->ne[0]);
    if (length <= 0)
        fail("Conv1d ", name, ": input of length ", x->ne[0], " is shorter than the kernel span ",
             int64_t(options.dilation) * (kernel - 1) + 1);

    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    if (direct)
        return direct->conv1d(ctx, x, ggml_reshape_3d(ctx, weight, kernel, in, out), bias, options.dilation,
                              options.pad_left, options.pad_right);
    if (depthwise() && on_cpu) {
        ggml_tensor *y = kernels::depthwise_conv1d(ctx, x, ggml_reshape_2d(ctx, weight, kernel, in), options.stride,
                                                   options.dilation, options.pad_left, options.pad_right);
        return bias ? ggml_add(ctx, y, ggml_reshape_2d(ctx, bias, 1, out)) : y;
    }
    int pad = options.pad_left;
    if (options.pad_left != options.pad_right) {
        x = ggml_pad_ext(ctx, x, options.pad_left, options.pad_right, 0, 0, 0, 0, 0, 0);
        pad = 0;
    }
    // im2col reads only the kernel's shape (K, C_in) from its first argument.
    ggml_tensor *kernel_shape = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, kernel, in);
    // columns: ggml [K*C_in, T_out, B], row index c*K + k
    ggml_tensor *columns =
        ggml_im2col(ctx, kernel_shape, x, options.stride, 0, pad, 0, options.dilation, 0, false, GGML_TYPE_F32);

    ggml_tensor *y; // ggml [C_out, T_out, B]
    if (depthwise()) {
        const int64_t batch = x->ne[2];
        ggml_tensor *taps = ggml_reshape_4d(ctx, columns, kernel, in, length, batch);
        ggml_tensor *products = ggml_mul(ctx, taps, ggml_reshape_2d(ctx, weight, kernel, in));
        y = ggml_reshape_3d(ctx, ggml_sum_rows(ctx, products), in, length, batch);
    } else {
        y = matmul(ctx, weight, columns);
    }
    y = ggml_cont(ctx, ggml_transpose(ctx, y)); // ggml [T_out, C_out, B]
    if (bias) y = ggml_add(ctx, y, ggml_reshape_2d(ctx, bias, 1, out));
    return y;
}

} // namespace chatterbox::nn
