#include "kernels/ggml_repack.h"

#include "core/error.h"

#include <string>

namespace chatterbox::kernels {

namespace {

class GgmlRepack final : public MatmulKernel {
  public:
    const char *name() const override { return "ggml_repack"; }
    bool runs_here() const override { return true; } // ggml's supports_op decides per weight
    const char *why_not_here() const override { return ""; }

    bool takes(const ggml_tensor *weight, const KernelSelection &) const override {
        return ggml_is_quantized(weight->type) && repack_buffer_type(weight) != nullptr;
    }
    ggml_backend_buffer_type_t buffer_type(const ggml_tensor *weight) const override {
        return repack_buffer_type(weight);
    }
    std::unique_ptr<PackedWeight> pack(const ggml_tensor *, const KernelSelection &, HugePageArena &) const override {
        return nullptr; // ggml repacked it on upload; ggml_mul_mat reads it there
    }

  private:
    // CPU_REPACK when ggml can multiply the weight in it, else nullptr. Only the repacked AVX
    // layouts: ggml's AMX buffer (usable since cmake/gcc12-amx fixes GCC 12's tile-config miscompile)
    // is not measured against them at T3's two decode columns, and its kernels die when other AMX
    // code (oneDNN) ran on the same thread before them.
    static ggml_backend_buffer_type_t repack_buffer_type(const ggml_tensor *weight) {
        static const auto extra_buffer_types = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
            Backend::cpu_backend_function("ggml_backend_dev_get_extra_bufts"));
        ggml_backend_dev_t dev = Backend::cpu_device();
        // The product this weight takes part in, with the weight in an empty buffer of the candidate
        // type: the extra buffer types decide support by buffer, type and shape.
        ggml_init_params params{3 * ggml_tensor_overhead(), nullptr, /*no_alloc=*/true};
        ggml_context *ctx = ggml_init(params);
        if (!ctx) fail("cannot create a ggml context");
        ggml_tensor *w = ggml_new_tensor(ctx, weight->type, GGML_MAX_DIMS, weight->ne);
        ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, weight->ne[0], 2);
        ggml_tensor *product = ggml_mul_mat(ctx, w, x);
        ggml_backend_buffer_type_t chosen = nullptr;
        for (ggml_backend_buffer_type_t *buft = extra_buffer_types(dev); buft && *buft && !chosen; ++buft) {
            if (std::string(ggml_backend_buft_name(*buft)) != "CPU_REPACK") continue;
            ggml_backend_buffer_t probe = ggml_backend_buft_alloc_buffer(*buft, 0);
            if (!probe) continue;
            w->buffer = probe;
            if (ggml_backend_dev_supports_op(dev, product)) chosen = *buft;
            w->buffer = nullptr;
            ggml_backend_buffer_free(probe);
        }
        ggml_free(ctx);
        return chosen;
    }
};

} // namespace

const MatmulKernel &ggml_repack_kernel() {
    static const GgmlRepack kernel;
    return kernel;
}

} // namespace chatterbox::kernels
