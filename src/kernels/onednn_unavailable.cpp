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

struct OnednnWeights::State {};
OnednnWeights::OnednnWeights(std::vector<ggml_backend_buffer_t>) { unavailable("the oneDNN matmul route"); }
OnednnWeights::~OnednnWeights() = default;

ggml_tensor *onednn_matmul(ggml_context *, ggml_tensor *, ggml_tensor *) { unavailable("the oneDNN matmul route"); }

ggml_tensor *blocked_attention(ggml_context *, ggml_tensor *, ggml_tensor *, ggml_tensor *, float) {
    unavailable("blocked attention");
}

double onednn_matmul_flops(const ggml_tensor *) { return 0; }

} // namespace chatterbox::kernels
