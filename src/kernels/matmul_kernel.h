#pragma once
// The one seam between a model's weights and the CPU kernels that multiply them.
//
// A MatmulKernel says whether it takes a weight on this CPU (CPUID, checked at run time: the
// engine's own code is built for any x86-64), where the weight's bytes go, and what it packs at load
// time; the PackedWeight it makes is owned by the weight binder and hung on the tensor itself
// (ggml_tensor::extra, as ggml's own repacked layouts hang their tensor_traits there), so the
// product node finds it from the weight alone. The binder (modules/module_weights.h) asks the
// registered kernels in order (matmul_kernels()) and the first that takes a weight has it; a weight
// none takes is multiplied by ggml_mul_mat. A new kernel is one file (a MatmulKernel) plus one line
// in matmul_kernel.cpp's list.
//
//   const MatmulKernel *k = choose_matmul_kernel(weight, selection, ProductPrecision::f32); // nullptr: ggml's
//   auto packed = k->pack(weight, selection, arena);                 // after the weight is placed
//   attach_packed(weight, packed.get());                             // the binder keeps `packed`
//   ggml_tensor *y = nn::matmul(ctx, weight, x);                     // packed->product(...) or ggml_mul_mat
//
// ggml itself uses `extra` only on tensors in buffers that are not host memory (its CPU repack and
// AMX buffers, CUDA's split buffers); a weight in a host buffer carries the engine's PackedWeight.

#include "core/backend.h"
#include "core/huge_pages.h"

#include "ggml-backend.h"
#include "ggml.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace chatterbox::kernels {

// The coarsest arithmetic a component's products may use, declared where its weights are bound
// (ModuleWeights): a kernel that rounds its operands to bf16 takes only the weights of a component
// whose output was measured to stay within its tolerance that way (the flow: flow_mel within 2.5e-2
// of f32, tests/golden/test_s3gen_flow_golden.cpp). Ordered from exact to coarse.
enum class ProductPrecision { f32, bf16 };

// What a product may apply to its result as it writes it, in the same node: nn::Linear's bias, an
// activation after it, and a residual the result is added to: residual + activation(W·x + bias).
struct Epilogue {
    enum class Activation { none, gelu_erf, gelu_tanh };
    ggml_tensor *bias = nullptr; // f32 [M], or nullptr
    Activation activation = Activation::none;
    ggml_tensor *residual = nullptr; // f32 of the product's shape with contiguous rows, or nullptr
};

// What a kernel made of one weight at load time: a copy in its own layout (or nothing, where it
// reads the tensor itself), and the product node that reads it. Immutable after pack(); graphs of
// concurrent sessions share it.
class PackedWeight {
  public:
    virtual ~PackedWeight() = default;
    // weight (the bound tensor, or a view of all of it) ggml [K, M] × x f32 ggml [K, ...] -> f32 [M, ...];
    // x's rows are contiguous but may be anywhere (strided or overlapping views).
    virtual ggml_tensor *product(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x) const = 0;
    // The product with `epilogue` applied as it is written, or nullptr where this kernel has no such
    // epilogue (the caller then adds the bias and applies the activation).
    virtual ggml_tensor *product_with(ggml_context *, ggml_tensor * /*weight*/, ggml_tensor * /*x*/,
                                      const Epilogue &) const {
        return nullptr;
    }
    virtual size_t bytes() const = 0; // of the kernel's own copy
};

class MatmulKernel {
  public:
    virtual ~MatmulKernel() = default;
    virtual const char *name() const = 0; // for KernelSelection, options and benchmarks
    // Kernels that trade exactness or need an opt-in are off unless KernelSelection::enable names them.
    virtual bool on_by_default() const { return true; }
    // The arithmetic of its products: f32 (ggml's, or the same sums in another order) unless it rounds.
    virtual ProductPrecision precision() const { return ProductPrecision::f32; }
    // Whether this build and CPU can run it (CPUID); why not, for errors.
    virtual bool runs_here() const = 0;
    virtual const char *why_not_here() const = 0;
    // Whether it multiplies this weight (a declared, not yet placed, 2-D matmul weight ggml [K, M]).
    virtual bool takes(const ggml_tensor *weight, const KernelSelection &selection) const = 0;
    // The buffer type the weight's own bytes must go to, or nullptr for the backend's default (or in
    // place in a mapped file).
    virtual ggml_backend_buffer_type_t buffer_type(const ggml_tensor *weight) const;
    // Called once the weight holds its values: the kernel's copy (allocated from `arena` where it
    // streams through it), or nullptr where ggml_mul_mat reads the placed tensor itself.
    virtual std::unique_ptr<PackedWeight> pack(const ggml_tensor *weight, const KernelSelection &selection,
                                               HugePageArena &arena) const = 0;
    // The FLOPs (2 per multiply-add) of a node its product() made; 0 for any other node.
    virtual double node_flops(const ggml_tensor *node) const;
};

// Every registered kernel, in the order the binder asks them.
const std::vector<const MatmulKernel *> &matmul_kernels();

// Throws InvalidArgument for a name no kernel has (matmul or convolution, kernels/conv_kernel.h), for
// enabling a kernel this CPU cannot run or a convolution kernel (on wherever it runs), and for a q4_K
// rows-per-pass value out of range.
void check_kernel_selection(const KernelSelection &selection);

// The first selected kernel that runs here, computes no coarser than `coarsest` and takes `weight`, or
// nullptr (ggml_mul_mat).
const MatmulKernel *choose_matmul_kernel(const ggml_tensor *weight, const KernelSelection &selection,
                                         ProductPrecision coarsest);

// Whether a selected kernel that runs here rounds coarser than f32 but no coarser than `coarsest`
// (a component that allows bf16 products has them wherever such a kernel runs).
bool rounding_kernel_runs(const KernelSelection &selection, ProductPrecision coarsest);

// Hangs `packed` (owned by the caller, living as long as the tensor) on `weight`.
void attach_packed(ggml_tensor *weight, const PackedWeight *packed);
// The PackedWeight of `weight`, or of the tensor it views when it covers all of it; else nullptr.
const PackedWeight *packed_of(const ggml_tensor *weight);

// The FLOPs of a product or convolution node made by any registered kernel (kernels/conv_kernel.h
// and kernels/depthwise_conv1d.h too; 0 for other nodes).
double kernel_node_flops(const ggml_tensor *node);

} // namespace chatterbox::kernels
