// The direct convolution kernels (kernels/conv_kernel.h): conv1d_avx512 and conv1d_avx2, the same
// tile loop (conv1d_direct_tile.h) in each instruction set. Each thread takes a contiguous range of
// tiles (batch item, tile_samples outputs of every channel), so one tile's inputs stay in cache
// while every channel block reads them. The zero padding is never materialised for the whole input:
// a tile whose inputs reach past either end reads a copy of its window with the zeros in place.

#include "kernels/conv1d_direct.h"

#include "core/error.h"
#include "kernels/conv_kernel.h"
#include "kernels/interned.h"

#include <cstring>
#include <tuple>
#include <vector>

namespace chatterbox::kernels {

namespace {

// What the op needs beyond its tensors (its userdata: interned).
struct Geometry {
    const conv1d::Isa *isa;
    int64_t pad_left, dilation;
    bool operator<(const Geometry &o) const {
        return std::tie(isa, pad_left, dilation) < std::tie(o.isa, o.pad_left, o.dilation);
    }
};

void conv1d_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    const Geometry &g = *static_cast<const Geometry *>(userdata);
    const ggml_tensor *x = dst->src[0], *kernel = dst->src[1], *bias = dst->src[2];
    const conv1d::Problem p{static_cast<const float *>(kernel->data),
                            bias ? static_cast<const float *>(bias->data) : nullptr,
                            static_cast<float *>(dst->data),
                            dst->ne[0],
                            kernel->ne[1],
                            kernel->ne[2],
                            kernel->ne[0],
                            g.dilation};
    const int64_t t_in = x->ne[0], span = g.dilation * (p.taps - 1) + 1, tile_samples = g.isa->tile_samples;
    const int64_t tiles_per_item = (p.t_out + tile_samples - 1) / tile_samples;
    const int64_t tiles = tiles_per_item * x->ne[2];
    thread_local std::vector<float> window; // a tile's inputs with its padding, channel by channel
    for (int64_t tile = tiles * ith / nth; tile < tiles * (ith + 1) / nth; ++tile) {
        const int64_t b = tile / tiles_per_item, t0 = tile % tiles_per_item * tile_samples;
        const int64_t t1 = t0 + tile_samples < p.t_out ? t0 + tile_samples : p.t_out;
        const int64_t first = t0 - g.pad_left, length = t1 - t0 + span - 1; // the inputs it reads
        const float *item = static_cast<const float *>(x->data) + b * p.in * t_in;
        if (first >= 0 && first + length <= t_in) {
            g.isa->tile(p, item + first, t_in, b, t0, t1);
            continue;
        }
        window.assign(size_t(p.in * length), 0.0f);
        const int64_t from = first < 0 ? 0 : first, to = first + length < t_in ? first + length : t_in;
        for (int64_t c = 0; from < to && c < p.in; ++c)
            std::memcpy(window.data() + c * length + (from - first), item + c * t_in + from,
                        size_t(to - from) * sizeof(float));
        g.isa->tile(p, window.data(), length, b, t0, t1);
    }
}

class DirectConv final : public ConvKernel {
  public:
    DirectConv(const char *name, const char *node_name, bool (*runs)(), const char *why_not,
               const conv1d::Isa &(*isa)())
        : name_(name), node_name_(node_name), runs_(runs), why_not_(why_not), isa_(isa) {}
    const char *name() const override { return name_; }
    bool runs_here() const override { return runs_(); }
    const char *why_not_here() const override { return why_not_; }

    ggml_tensor *conv1d(ggml_context *ctx, ggml_tensor *x, ggml_tensor *kernel, ggml_tensor *bias, int dilation,
                        int pad_left, int pad_right) const override {
        if (!runs_here()) fail(name_, ": ", why_not_);
        const int64_t span = int64_t(dilation) * (kernel->ne[0] - 1) + 1, padded = x->ne[0] + pad_left + pad_right;
        if (x->type != GGML_TYPE_F32 || kernel->type != GGML_TYPE_F32 || !ggml_is_contiguous(kernel) ||
            x->ne[1] != kernel->ne[1] || x->ne[3] != 1 || dilation < 1 || pad_left < 0 || pad_right < 0 ||
            padded < span || (bias && (bias->type != GGML_TYPE_F32 || ggml_nelements(bias) != kernel->ne[2])))
            fail(name_, ": needs f32 x [T, C_in, B] with T + padding >= ", span,
                 ", a contiguous f32 kernel [K, C_in, C_out] and an f32 bias [C_out]; got x ", ggml_type_name(x->type),
                 " [", x->ne[0], ", ", x->ne[1], ", ", x->ne[2], ", ", x->ne[3], "], kernel ",
                 ggml_type_name(kernel->type), " [", kernel->ne[0], ", ", kernel->ne[1], ", ", kernel->ne[2], "]");
        if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
        ggml_tensor *args[] = {x, kernel, bias};
        ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, padded - span + 1, kernel->ne[2], x->ne[2], 1, args,
                                        bias ? 3 : 2, conv1d_op, GGML_N_TASKS_MAX,
                                        const_cast<Geometry *>(interned(Geometry{&isa_(), pad_left, dilation})));
        return ggml_set_name(y, node_name_);
    }

    double node_flops(const ggml_tensor *node) const override {
        if (node->op != GGML_OP_CUSTOM || std::strcmp(node->name, node_name_) != 0) return 0;
        const ggml_tensor *kernel = node->src[1];
        return 2.0 * double(ggml_nelements(node)) * double(kernel->ne[0] * kernel->ne[1]);
    }

  private:
    const char *name_, *node_name_;
    bool (*runs_)();
    const char *why_not_;
    const conv1d::Isa &(*isa_)();
};

bool has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool has_avx512() { return has_avx2() && __builtin_cpu_supports("avx512f"); }

} // namespace

const ConvKernel &conv1d_avx512_kernel() {
    static const DirectConv kernel("conv1d_avx512", "conv1d.avx512", has_avx512, "this CPU has no AVX-512F",
                                   conv1d::avx512_isa);
    return kernel;
}

const ConvKernel &conv1d_avx2_kernel() {
    static const DirectConv kernel("conv1d_avx2", "conv1d.avx2", has_avx2, "this CPU has no AVX2 with FMA",
                                   conv1d::avx2_isa);
    return kernel;
}

} // namespace chatterbox::kernels
