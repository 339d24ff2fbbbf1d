#pragma once
// Binding named weights to a model component, uploaded to a backend.
//
// A component declares every tensor it uses with its expected PyTorch shape; problems are
// collected, not thrown one at a time, so a bad model reports every missing, unexpected or
// mis-shaped tensor by name in one error. Then load() puts every tensor on the backend: on the CPU a
// tensor stored in a mapped file in its final type and layout is used in place (no copy: the file's
// pages are the weights, shared with the page cache and with other processes), any other is uploaded
// into one backend buffer per buffer type. On the CPU each matmul weight goes to the first matmul
// kernel that takes it (kernels/matmul_kernel.h): in the buffer that kernel asks for, with the copy
// it packs hung on the tensor and owned here.
//
//   ModuleWeights w(store, "t3.", backend);
//   ggml_tensor *q = w.get("tfmr.layers.0.self_attn.q_proj.weight", {1024, 1024}, WeightUse::matmul);
//   ggml_tensor *g = w.get("tfmr.norm.weight", {1024}, WeightUse::f32);
//   ggml_tensor *c = w.get_matrix("conv.weight", {512, 256, 3}); // bound as the matrix {512, 768}
//   w.ignore("tfmr.rotary_emb.");   // present in the file, deliberately unused
//   w.load();                       // throws Error listing every problem

#include "core/backend.h"
#include "core/huge_pages.h"
#include "core/tensor.h"
#include "core/weight_store.h"
#include "kernels/conv_kernel.h"
#include "kernels/matmul_kernel.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace chatterbox {

// How the model uses a stored tensor; it decides the uploaded type and buffer, so every binding
// names it (a matrix product's weight cannot miss the faster layout by accident).
enum class WeightUse {
    // Only ever the weight of nn::matmul (a Linear weight): stored type; on the CPU a matmul kernel
    // may place it in its own layout or multiply a packed copy, so it must not be read back or used
    // by any other op.
    matmul,
    // Converted to f32 at upload: norm weights, biases, anything element-wise ops read.
    f32,
    // Read by another op in its stored type (ggml_get_rows, im2col's kernel shape): plain layout.
    as_stored,
};

class ModuleWeights {
  public:
    // prefix: the component's name prefix in the store ("ve.", "t3.", "s3gen."); coarsest: the
    // coarsest arithmetic its products may use (kernels/matmul_kernel.h).
    ModuleWeights(const WeightStore &store, std::string prefix, Backend &backend,
                  kernels::ProductPrecision coarsest = kernels::ProductPrecision::f32);
    ~ModuleWeights();
    ModuleWeights(const ModuleWeights &) = delete;
    ModuleWeights &operator=(const ModuleWeights &) = delete;

    // A stored tensor (name without the prefix) for `use`. Requested again for the same type it is
    // the same tensor; one also used by another op than ggml_mul_mat keeps the plain layout.
    ggml_tensor *get(const std::string &name, const Shape &shape, WeightUse use);
    // A stored kernel (out, in, ...) or its flattened form (out, in·...) as the matrix (out, in·...) a
    // convolution multiplies (the same bytes, row-major), for nn::matmul only (WeightUse::matmul).
    ggml_tensor *get_matrix(const std::string &name, const Shape &kernel_shape);
    // A tensor computed on the host at load time (e.g. a folded weight norm); uploaded as f32, or as
    // f16 / bf16 where `type` says (values the caller knows that type holds exactly, e.g. a stored
    // f16 weight's reordered). `use` matmul (a 2-D matrix) lets the matmul kernels take it, as a
    // stored one.
    ggml_tensor *derived(const std::string &name, const Shape &shape, std::vector<float> values,
                         WeightUse use = WeightUse::f32, ggml_type type = GGML_TYPE_F32);
    // Reads a stored tensor to the host as f32 (for load-time folding); records a problem when it
    // is missing or mis-shaped and then returns zeros of the expected shape.
    std::vector<float> host_f32(const std::string &name, const Shape &shape);

    bool has(const std::string &name) const;
    // The stored tensor (name without the prefix) or nullptr, for modules that accept more than
    // one stored layout (e.g. a conv kernel flattened to 2-D so that it can be quantised).
    const TensorView *stored(const std::string &name) const;
    // Tensors under this name prefix are present but deliberately unused (not "unexpected").
    void ignore(const std::string &name_prefix);

    // Reports every problem (missing, mis-shaped, unexpected) in one Error, or puts every declared
    // tensor on the backend (in place or uploaded, see above).
    void load();
    size_t bytes() const; // of the weights on the backend, in place or uploaded (a packed weight: its copy)
    const std::string &prefix() const { return prefix_; }
    // How many weights each matmul kernel took ("ggml_mul_mat" for the rest), after load().
    std::map<std::string, int> matmul_kernel_counts() const;
    // Whether the modules bound here compute on a CPU backend (where they may take CPU-only kernels).
    bool on_cpu() const { return backend_.is_cpu(); }
    // The direct convolution kernel for the convolutions bound here (kernels/conv_kernel.h): on a CPU,
    // the first that runs and the backend's selection leaves in, unless this component's products may
    // round and a kernel that does runs here (bf16 products are faster than f32 direct ones); else
    // nullptr (im2col + product).
    const kernels::ConvKernel *conv_kernel() const;
    // The coarsest arithmetic products bound here use: bf16 where this component allows it and a
    // kernel that rounds to it runs on this (CPU) backend and is selected, else f32. For ops that
    // choose their own precision (the blocked attention) so that they round where the weights do.
    kernels::ProductPrecision product_precision() const;

  private:
    struct Upload {
        ggml_tensor *tensor;
        const TensorView *source; // stored bytes, or nullptr for derived values
        std::vector<float> values;
        bool matmul_only = false;
        const kernels::MatmulKernel *kernel = nullptr; // chosen at load() for a matmul-only weight
    };
    // get() with the tensor bound in `bound_shape` (the same elements as the stored `shape`).
    ggml_tensor *get(const std::string &name, const Shape &shape, WeightUse use, const Shape &bound_shape);
    ggml_tensor *new_tensor(const std::string &full_name, ggml_type type, const Shape &shape);
    const TensorView *check(const std::string &name, const Shape &shape);
    void upload_all();
    // Allocates one buffer of `buft` holding `uploads` and writes their values.
    void upload_to(ggml_backend_buffer_type_t buft, const std::vector<Upload *> &uploads);
    // Whether the stored bytes can be the CPU tensor itself: the same type, in a mapped file, aligned.
    bool usable_in_place(const Upload &upload) const;
    // Points `uploads` (all in the same mapped file) at their bytes in the mapping.
    void bind_in_place(const std::vector<Upload *> &uploads);

    const WeightStore &store_;
    std::string prefix_;
    Backend &backend_;
    const kernels::ProductPrecision coarsest_;
    std::vector<ggml_context *> contexts_; // tensor metadata; a new one when the last is full
    int context_free_slots_ = 0;
    std::vector<ggml_backend_buffer_t> buffers_;              // the default weight buffer, then any faster-layout ones
    std::vector<ggml_backend_buffer_t> mapped_buffers_;       // one per mapped file with tensors used in place
    std::vector<std::shared_ptr<const MappedFile>> mappings_; // kept mapped while those tensors live
    size_t in_place_bytes_ = 0;
    HugePageArena packed_arena_; // of the kernels' copies that stream through it at every step
    std::vector<std::unique_ptr<kernels::PackedWeight>> packed_; // hung on their tensors (ggml_tensor::extra)
    bool loaded_ = false;
    std::vector<Upload> uploads_;
    std::map<std::pair<std::string, bool>, ggml_tensor *> declared_; // (name, as f32) -> tensor
    std::set<std::string> derived_names_;
    std::set<std::string> used_;
    std::vector<std::string> ignored_prefixes_;
    std::vector<std::string> problems_;
};

} // namespace chatterbox
