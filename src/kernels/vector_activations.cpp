#include "kernels/vector_activations.h"

#include "core/error.h"
#include "kernels/vector_activations_isa.h"

#include <cstdint>

namespace chatterbox::kernels {

#if defined(__x86_64__)
namespace {

using activations::Isa;
using activations::kSplitLanes;

// The widest set the CPU has: AVX-512F (16 lanes, the same bits), else AVX2, which every x86 build
// of ggml needs anyway.
const Isa &isa() {
    static const Isa &chosen = __builtin_cpu_supports("avx512f") ? activations::avx512_isa() : activations::avx2_isa();
    return chosen;
}

// Each thread a contiguous range of whole vectors of the (contiguous) tensor.
template <void (*const Isa::*F)(const float *, float *, int64_t)>
void map_op(ggml_tensor *dst, const ggml_tensor *x, int ith, int nth, void *) {
    const int64_t n = ggml_nelements(dst), vectors = (n + kSplitLanes - 1) / kSplitLanes;
    const int64_t begin = vectors * ith / nth * kSplitLanes, end = vectors * (ith + 1) / nth * kSplitLanes;
    if (begin < n)
        (isa().*F)(static_cast<const float *>(x->data) + begin, static_cast<float *>(dst->data) + begin,
                   (end < n ? end : n) - begin);
}

// Each thread a contiguous range of rows (T values of one channel).
void snake_op(ggml_tensor *dst, const ggml_tensor *x, const ggml_tensor *alpha, const ggml_tensor *inv_alpha, int ith,
              int nth, void *) {
    const int64_t length = x->ne[0], channels = x->ne[1], rows = ggml_nrows(x);
    const auto *a = static_cast<const float *>(alpha->data);
    const auto *inv = static_cast<const float *>(inv_alpha->data);
    const Isa &set = isa();
    for (int64_t row = rows * ith / nth; row < rows * (ith + 1) / nth; ++row)
        set.snake(static_cast<const float *>(x->data) + row * length, static_cast<float *>(dst->data) + row * length,
                  length, a[row % channels], inv[row % channels]);
}

ggml_tensor *map_node(ggml_context *ctx, ggml_tensor *x, ggml_custom1_op_t op, const char *name) {
    if (x->type != GGML_TYPE_F32) return nullptr;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor *y = ggml_map_custom1(ctx, x, op, GGML_N_TASKS_MAX, nullptr);
    return ggml_set_name(y, name);
}

} // namespace

bool vector_activations_available() { return true; }
ggml_tensor *gelu_erf(ggml_context *ctx, ggml_tensor *x) {
    return map_node(ctx, x, map_op<&Isa::gelu_erf>, "gelu_erf.vector");
}
ggml_tensor *gelu_tanh(ggml_context *ctx, ggml_tensor *x) {
    return map_node(ctx, x, map_op<&Isa::gelu_tanh>, "gelu_tanh.vector");
}
ggml_tensor *mish(ggml_context *ctx, ggml_tensor *x) { return map_node(ctx, x, map_op<&Isa::mish>, "mish.vector"); }
void gelu_erf_in_place(float *values, int64_t count) { isa().gelu_erf(values, values, count); }
void gelu_tanh_in_place(float *values, int64_t count) { isa().gelu_tanh(values, values, count); }
ggml_tensor *snake(ggml_context *ctx, ggml_tensor *x, ggml_tensor *alpha, ggml_tensor *inv_alpha) {
    if (x->type != GGML_TYPE_F32 || alpha->type != GGML_TYPE_F32 || inv_alpha->type != GGML_TYPE_F32) return nullptr;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    return ggml_set_name(ggml_map_custom3(ctx, x, alpha, inv_alpha, snake_op, GGML_N_TASKS_MAX, nullptr),
                         "snake.vector");
}
#else
bool vector_activations_available() { return false; }
ggml_tensor *gelu_erf(ggml_context *, ggml_tensor *) { return nullptr; }
ggml_tensor *gelu_tanh(ggml_context *, ggml_tensor *) { return nullptr; }
ggml_tensor *mish(ggml_context *, ggml_tensor *) { return nullptr; }
void gelu_erf_in_place(float *, int64_t) { fail("vector activations: not built for this CPU"); }
void gelu_tanh_in_place(float *, int64_t) { fail("vector activations: not built for this CPU"); }
ggml_tensor *snake(ggml_context *, ggml_tensor *, ggml_tensor *, ggml_tensor *) { return nullptr; }
#endif

} // namespace chatterbox::kernels
