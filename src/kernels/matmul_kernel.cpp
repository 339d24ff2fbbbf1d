#include "kernels/matmul_kernel.h"

#include "core/error.h"
#include "kernels/conv_kernel.h"
#include "kernels/depthwise_conv1d.h"
#include "kernels/ggml_repack.h"
#include "kernels/onednn.h"
#include "kernels/q4k.h"
#include "kernels/q8_0.h"

#include <algorithm>

namespace chatterbox::kernels {

ggml_backend_buffer_type_t MatmulKernel::buffer_type(const ggml_tensor *) const { return nullptr; }

double MatmulKernel::node_flops(const ggml_tensor *) const { return 0; }

const std::vector<const MatmulKernel *> &matmul_kernels() {
    // The registrations. The engine's q4_K and q8_0 kernels come before ggml's repack, which takes
    // those types too; the oneDNN bf16 product comes first for the components that allow bf16 (it
    // takes any float weight); the oneDNN f32 product is opt-in (its products are not ggml's bits).
    // One registration a line.
    // clang-format off
    static const std::vector<const MatmulKernel *> kernels{
        &onednn_bf16_kernel(),
        &q4k_kernel(Int8Isa::avx512_vnni),
        &q4k_kernel(Int8Isa::avx2),
        &q8_0_kernel(Int8Isa::avx512_vnni),
        &q8_0_kernel(Int8Isa::avx2),
        &ggml_repack_kernel(),
        &onednn_f32_kernel(),
    };
    // clang-format on
    return kernels;
}

namespace {
// nullptr when no kernel has that name.
const MatmulKernel *find_matmul_kernel(const std::string &name) {
    for (const MatmulKernel *kernel : matmul_kernels())
        if (name == kernel->name()) return kernel;
    return nullptr;
}

std::string kernel_names() {
    std::string names;
    for (const MatmulKernel *kernel : matmul_kernels())
        names += (names.empty() ? "" : ", ") + std::string(kernel->name());
    for (const ConvKernel *kernel : conv_kernels()) names += ", " + std::string(kernel->name());
    return names;
}

bool listed(const std::vector<std::string> &names, const char *name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

bool selected(const MatmulKernel &kernel, const KernelSelection &selection) {
    if (listed(selection.disable, kernel.name())) return false;
    return kernel.on_by_default() || listed(selection.enable, kernel.name());
}
} // namespace

void check_kernel_selection(const KernelSelection &selection) {
    for (const auto *names : {&selection.enable, &selection.disable})
        for (const std::string &name : *names)
            if (!find_matmul_kernel(name) && !find_conv_kernel(name))
                throw InvalidArgument(concat("unknown kernel '", name, "' (known: ", kernel_names(), ")"));
    for (const std::string &name : selection.enable) {
        if (find_conv_kernel(name))
            throw InvalidArgument(
                concat("convolution kernel '", name, "' is on wherever it runs; it can only be disabled"));
        const MatmulKernel &kernel = *find_matmul_kernel(name);
        if (!kernel.runs_here())
            throw InvalidArgument(concat("matmul kernel '", name, "' cannot run here: ", kernel.why_not_here()));
        if (listed(selection.disable, kernel.name()))
            throw InvalidArgument(concat("matmul kernel '", name, "' is both enabled and disabled"));
    }
    if (selection.tile_rows_per_pass < 0 || selection.tile_rows_per_pass > kInt8MaxRowsPerPass)
        throw InvalidArgument(concat("int8 tile kernels: ", selection.tile_rows_per_pass,
                                     " rows per pass, expected 1 to ", kInt8MaxRowsPerPass, " (0: the CPU's default)"));
}

const MatmulKernel *choose_matmul_kernel(const ggml_tensor *weight, const KernelSelection &selection,
                                         ProductPrecision coarsest) {
    for (const MatmulKernel *kernel : matmul_kernels())
        if (selected(*kernel, selection) && kernel->precision() <= coarsest && kernel->runs_here() &&
            kernel->takes(weight, selection))
            return kernel;
    return nullptr;
}

bool rounding_kernel_runs(const KernelSelection &selection, ProductPrecision coarsest) {
    for (const MatmulKernel *kernel : matmul_kernels())
        if (selected(*kernel, selection) && kernel->precision() > ProductPrecision::f32 &&
            kernel->precision() <= coarsest && kernel->runs_here())
            return true;
    return false;
}

void attach_packed(ggml_tensor *weight, const PackedWeight *packed) {
    if (!weight->buffer || !ggml_backend_buffer_is_host(weight->buffer))
        fail("matmul kernels: ", ggml_get_name(weight), " is not in host memory; its packed copy cannot be attached");
    if (weight->extra) fail("matmul kernels: ", ggml_get_name(weight), " already carries other data");
    weight->extra = const_cast<PackedWeight *>(packed);
}

const PackedWeight *packed_of(const ggml_tensor *weight) {
    const ggml_tensor *stored = weight->view_src ? weight->view_src : weight;
    // A view's buffer is set only once its graph is allocated; its source's is the weight's buffer.
    if (!stored->extra || !stored->buffer || !ggml_backend_buffer_is_host(stored->buffer)) return nullptr;
    const bool whole = weight->data == stored->data && weight->ne[0] == stored->ne[0] &&
                       weight->ne[1] == stored->ne[1] && ggml_nelements(weight) == ggml_nelements(stored);
    return whole ? static_cast<const PackedWeight *>(stored->extra) : nullptr;
}

double kernel_node_flops(const ggml_tensor *node) {
    for (const MatmulKernel *kernel : matmul_kernels())
        if (const double flops = kernel->node_flops(node); flops > 0) return flops;
    for (const ConvKernel *kernel : conv_kernels())
        if (const double flops = kernel->node_flops(node); flops > 0) return flops;
    return depthwise_conv1d_flops(node);
}

} // namespace chatterbox::kernels
