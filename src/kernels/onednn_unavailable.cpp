// Linked instead of onednn.cpp when the build has no oneDNN (see CMakeLists.txt).
#include "kernels/onednn.h"

#include "core/error.h"

namespace chatterbox::kernels {

namespace {
[[noreturn]] void unavailable(const char *what) {
    fail(what, " needs oneDNN, and this build has none (libdnnl-dev missing, or a ThreadSanitizer build)");
}
} // namespace

bool onednn_available() { return false; }

namespace {
// A oneDNN kernel in a build without oneDNN: registered under its name, never chosen.
class Unavailable final : public MatmulKernel {
  public:
    explicit Unavailable(const char *name) : name_(name) {}
    const char *name() const override { return name_; }
    bool on_by_default() const override { return false; }
    bool runs_here() const override { return false; }
    const char *why_not_here() const override {
        return "this build has no oneDNN (libdnnl-dev missing, or a ThreadSanitizer build)";
    }
    bool takes(const ggml_tensor *, const KernelSelection &) const override { return false; }
    std::unique_ptr<PackedWeight> pack(const ggml_tensor *, const KernelSelection &, HugePageArena &) const override {
        unavailable(name_);
    }

  private:
    const char *name_;
};
} // namespace

const MatmulKernel &onednn_f32_kernel() {
    static const Unavailable kernel("onednn_f32");
    return kernel;
}

const MatmulKernel &onednn_bf16_kernel() {
    static const Unavailable kernel("onednn_bf16");
    return kernel;
}

ggml_tensor *onednn_matmul(ggml_context *, ggml_tensor *, ggml_tensor *) { unavailable("the oneDNN f32 product"); }

ggml_tensor *blocked_attention(ggml_context *, ggml_tensor *, ggml_tensor *, ggml_tensor *, float, ProductPrecision,
                               const RelativePositions &) {
    unavailable("blocked attention");
}

double onednn_matmul_flops(const ggml_tensor *) { return 0; }

double blocked_attention_flops(const ggml_tensor *) { return 0; }

} // namespace chatterbox::kernels
