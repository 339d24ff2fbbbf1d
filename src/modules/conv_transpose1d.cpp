#include "modules/conv_transpose1d.h"

#include "core/error.h"
#include "modules/matmul.h"
#include "modules/weight_norm.h"

namespace chatterbox::nn {

ConvTranspose1d::ConvTranspose1d(ModuleWeights &w, const std::string &prefix, int64_t in_, int64_t out_, int kernel_,
                                 const ConvOptions &options_)
    : in(in_), out(out_), kernel(kernel_), options(options_) {
    const ConvOptions &o = options;
    if (in <= 0 || out <= 0 || kernel <= 0 || o.stride <= 0 || o.pad_left < 0 || o.output_padding < 0)
        fail("ConvTranspose1d ", prefix, ": bad configuration (in ", in, ", out ", out, ", kernel ", kernel,
             ", stride ", o.stride, ", padding ", o.pad_left, ", output_padding ", o.output_padding, ")");
    if (o.pad_right != o.pad_left || o.causal || o.dilation != 1 || o.groups != 1)
        fail("ConvTranspose1d ", prefix, ": only symmetric padding, dilation 1 and groups 1 are supported");
    if (o.output_padding >= o.stride)
        fail("ConvTranspose1d ", prefix, ": output_padding ", o.output_padding, " must be smaller than the stride ",
             o.stride);

    const Shape shape = {in, out, kernel};
    const std::vector<float> stored =
        o.weight_norm ? weight_norm_values(w, prefix, shape) : w.host_f32(prefix + ".weight", shape);
    // (in, out, K) -> (out*K, in): the matrix multiplication then yields per input frame the
    // K*C_out columns col2im expects (row oc*K + k).
    std::vector<float> columns(stored.size());
    for (int64_t ic = 0; ic < in; ++ic)
        for (int64_t ok = 0; ok < out * kernel; ++ok)
            columns[size_t(ok * in + ic)] = stored[size_t(ic * out * kernel + ok)];
    weight = w.derived(prefix + ".weight.columns", {out * kernel, in}, std::move(columns), WeightUse::matmul);
    if (o.bias) bias = w.get(prefix + ".bias", {out}, WeightUse::f32);
}

int64_t ConvTranspose1d::output_length(int64_t input_length) const {
    return (input_length - 1) * options.stride - 2 * int64_t(options.pad_left) + kernel + options.output_padding;
}

ggml_tensor *ConvTranspose1d::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (!weight) fail("ConvTranspose1d used before it was bound");
    const char *name = ggml_get_name(weight);
    if (x->type != GGML_TYPE_F32 || x->ne[1] != in || x->ne[3] != 1)
        fail("ConvTranspose1d ", name, ": input must be f32 ggml [T, ", in, ", B], got ", ggml_type_name(x->type), " [",
             x->ne[0], ", ", x->ne[1], ", ", x->ne[2], ", ", x->ne[3], "]");
    const int64_t frames = x->ne[0], batch = x->ne[2];
    const int64_t length = output_length(frames);
    if (length <= 0) fail("ConvTranspose1d ", name, ": input of length ", frames, " gives an empty output");

    // columns: ggml [K*C_out, T, B]
    ggml_tensor *columns = matmul(ctx, weight, ggml_cont(ctx, ggml_transpose(ctx, x)));
    const int pad = options.pad_left;
    const int64_t full = (frames - 1) * options.stride + kernel; // before cropping
    ggml_tensor *y = nullptr;
    for (int64_t b = 0; b < batch; ++b) {
        ggml_tensor *cols_b =
            ggml_view_2d(ctx, columns, columns->ne[0], frames, columns->nb[1], size_t(b) * columns->nb[2]);
        ggml_tensor *y_b;
        if (options.output_padding == 0) {
            y_b = ggml_col2im_1d(ctx, cols_b, options.stride, int(out), pad);
        } else {
            // Uncropped signal, then [pad, pad + length); the output padding past its end is zeros.
            ggml_tensor *uncropped = ggml_col2im_1d(ctx, cols_b, options.stride, int(out), 0);
            if (pad + length > full)
                uncropped = ggml_pad_ext(ctx, uncropped, 0, int(pad + length - full), 0, 0, 0, 0, 0, 0);
            y_b = ggml_cont(ctx, ggml_view_2d(ctx, uncropped, length, out, uncropped->nb[1],
                                              size_t(pad) * ggml_element_size(uncropped)));
        }
        y = y ? ggml_concat(ctx, y, y_b, 2) : y_b;
    }
    y = ggml_reshape_3d(ctx, y, length, out, batch);
    if (bias) y = ggml_add(ctx, y, ggml_reshape_2d(ctx, bias, 1, out));
    return y;
}

} // namespace chatterbox::nn
