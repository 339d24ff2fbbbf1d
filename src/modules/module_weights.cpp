#include "modules/module_weights.h"

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/shape.h"
#include "core/string_match.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"

#include <algorithm>
#include <iterator>

namespace chatterbox {

namespace {

constexpr int kTensorsPerContext = 512;
constexpr size_t kMaxListedProblems = 50;

// PyTorch shapes that differ only by leading ones describe the same data (a GGUF file keeps no
// trailing ggml dimensions of size 1), so they match.
bool shapes_match(const Shape &a, const Shape &b) {
    if (a.size() > size_t(kMaxDims) || b.size() > size_t(kMaxDims)) return a == b;
    return ggml_ne_from_torch(a) == ggml_ne_from_torch(b);
}

bool is_float_type(ggml_type type) {
    if (type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16) return true;
    return ggml_is_quantized(type) && ggml_get_type_traits(type)->to_float != nullptr;
}

// ggml keeps GGML_MAX_NAME - 1 characters; the tail of a long weight name is the informative part.
std::string ggml_name_for(const std::string &full_name) {
    constexpr size_t keep = GGML_MAX_NAME - 1;
    if (full_name.size() <= keep) return full_name;
    return ".." + full_name.substr(full_name.size() - (keep - 2));
}

} // namespace

ModuleWeights::ModuleWeights(const WeightStore &store, std::string prefix, Backend &backend,
                             kernels::ProductPrecision coarsest)
    : store_(store), prefix_(std::move(prefix)), backend_(backend), coarsest_(coarsest) {}

ModuleWeights::~ModuleWeights() {
    for (ggml_backend_buffer_t buffer : buffers_) ggml_backend_buffer_free(buffer);
    for (ggml_backend_buffer_t buffer : mapped_buffers_) ggml_backend_buffer_free(buffer);
    for (ggml_context *ctx : contexts_) ggml_free(ctx);
}

ggml_tensor *ModuleWeights::new_tensor(const std::string &full_name, ggml_type type, const Shape &shape) {
    if (context_free_slots_ == 0) {
        ggml_init_params params{ggml_tensor_overhead() * kTensorsPerContext, nullptr, /*no_alloc=*/true};
        ggml_context *ctx = ggml_init(params);
        if (!ctx) fail("cannot create a ggml context for the weights of '", prefix_, "'");
        contexts_.push_back(ctx);
        context_free_slots_ = kTensorsPerContext;
    }
    --context_free_slots_;
    ggml_tensor *t = new_tensor_torch(contexts_.back(), type, shape);
    ggml_set_name(t, ggml_name_for(full_name).c_str());
    return t;
}

const TensorView *ModuleWeights::check(const std::string &name, const Shape &shape) {
    const std::string full = prefix_ + name;
    const TensorView *view = store_.find(full);
    if (!view) {
        problems_.push_back(concat(full, ": missing (expected ", shape_str(shape), ")"));
        return nullptr;
    }
    used_.insert(full);
    if (!shapes_match(view->shape, shape)) {
        problems_.push_back(concat(full, ": expected ", shape_str(shape), ", file has ", shape_str(view->shape)));
        return nullptr;
    }
    if (!is_float_type(view->type)) {
        problems_.push_back(
            concat(full, ": unsupported type ", ggml_type_name(view->type), " (expected a float type)"));
        return nullptr;
    }
    return view;
}

ggml_tensor *ModuleWeights::get(const std::string &name, const Shape &shape, WeightUse use) {
    return get(name, shape, use, shape);
}

ggml_tensor *ModuleWeights::get(const std::string &name, const Shape &shape, WeightUse use, const Shape &bound_shape) {
    if (loaded_) fail("weight ", prefix_, name, " declared after load()");
    const bool force_f32 = use == WeightUse::f32, matmul_only = use == WeightUse::matmul;
    auto key = std::make_pair(name, force_f32);
    if (auto it = declared_.find(key); it != declared_.end()) {
        if (!same_shape(it->second, bound_shape))
            fail("weight ", prefix_, name, " requested as ", shape_str(bound_shape), " and as ",
                 shape_str(torch_shape_of(it->second)));
        if (!matmul_only) // used by other ops too: keep the plain layout
            for (Upload &u : uploads_)
                if (u.tensor == it->second) u.matmul_only = false;
        return it->second;
    }
    const TensorView *view = check(name, shape);
    // On a problem the tensor still gets the expected shape, so binding goes on and load()
    // reports every problem at once.
    const ggml_type type = force_f32 || !view ? GGML_TYPE_F32 : view->type;
    ggml_tensor *t = new_tensor(prefix_ + name, type, bound_shape);
    uploads_.push_back(Upload{t, view, {}, matmul_only});
    declared_.emplace(key, t);
    return t;
}

const kernels::ConvKernel *ModuleWeights::conv_kernel() const {
    if (!backend_.is_cpu() || product_precision() != kernels::ProductPrecision::f32) return nullptr;
    return kernels::choose_conv_kernel(backend_.kernels());
}

kernels::ProductPrecision ModuleWeights::product_precision() const {
    const bool rounds = backend_.is_cpu() && kernels::rounding_kernel_runs(backend_.kernels(), coarsest_);
    return rounds ? coarsest_ : kernels::ProductPrecision::f32;
}

ggml_tensor *ModuleWeights::get_matrix(const std::string &name, const Shape &kernel_shape) {
    if (kernel_shape.size() < 2)
        fail("weight ", prefix_, name, ": a matrix needs a kernel shape of 2 or more dimensions");
    const Shape matrix{kernel_shape[0], shape_numel(kernel_shape) / kernel_shape[0]};
    const TensorView *view = stored(name);
    return get(name, view && view->shape == matrix ? matrix : kernel_shape, WeightUse::matmul, matrix);
}

ggml_tensor *ModuleWeights::derived(const std::string &name, const Shape &shape, std::vector<float> values,
                                    WeightUse use, ggml_type type) {
    if (loaded_) fail("derived weight ", prefix_, name, " declared after load()");
    if (int64_t(values.size()) != shape_numel(shape))
        fail("derived weight ", prefix_, name, ": ", values.size(), " values for shape ", shape_str(shape));
    if (!derived_names_.insert(name).second) fail("derived weight ", prefix_, name, " declared twice");
    if (use == WeightUse::as_stored) fail("derived weight ", prefix_, name, " has no stored form");
    if (type != GGML_TYPE_F32 && type != GGML_TYPE_F16 && type != GGML_TYPE_BF16)
        fail("derived weight ", prefix_, name, ": f32, f16 or bf16, not ", ggml_type_name(type));
    if (use == WeightUse::f32 && type != GGML_TYPE_F32) fail("derived weight ", prefix_, name, " used as f32");
    ggml_tensor *t = new_tensor(prefix_ + name, type, shape);
    uploads_.push_back(Upload{t, nullptr, std::move(values), use == WeightUse::matmul});
    return t;
}

std::vector<float> ModuleWeights::host_f32(const std::string &name, const Shape &shape) {
    const TensorView *view = check(name, shape);
    if (!view) return std::vector<float>(size_t(shape_numel(shape)), 0.0f);
    return to_f32(*view);
}

bool ModuleWeights::has(const std::string &name) const { return store_.find(prefix_ + name) != nullptr; }

const TensorView *ModuleWeights::stored(const std::string &name) const { return store_.find(prefix_ + name); }

void ModuleWeights::ignore(const std::string &name_prefix) { ignored_prefixes_.push_back(prefix_ + name_prefix); }

void ModuleWeights::load() {
    if (loaded_) fail("ModuleWeights::load() called twice for '", prefix_, "'");
    for (const std::string &name : store_.names_with_prefix(prefix_)) {
        if (used_.count(name)) continue;
        const bool ignored = std::any_of(ignored_prefixes_.begin(), ignored_prefixes_.end(),
                                         [&](const std::string &p) { return starts_with(name, p); });
        if (ignored) continue;
        const TensorView &view = store_.get(name);
        problems_.push_back(concat(name, ": unexpected tensor ", shape_str(view.shape), " ", ggml_type_name(view.type),
                                   " (not used by the model)"));
    }
    if (!problems_.empty()) {
        std::string message = concat("weights of '", prefix_, "' do not match the model (", problems_.size(),
                                     problems_.size() == 1 ? " problem):" : " problems):");
        const size_t listed = std::min(problems_.size(), kMaxListedProblems);
        for (size_t i = 0; i < listed; ++i) message += "\n  " + problems_[i];
        if (problems_.size() > listed) message += concat("\n  and ", problems_.size() - listed, " more");
        throw Error(message);
    }
    upload_all();
    loaded_ = true;
}

void ModuleWeights::upload_all() {
    const KernelSelection &selection = backend_.kernels();
    if (backend_.is_cpu()) kernels::check_kernel_selection(selection);
    std::map<ggml_backend_buffer_type_t, std::vector<Upload *>> by_buffer_type;
    std::map<const MappedFile *, std::vector<Upload *>> by_mapping;
    for (Upload &u : uploads_) {
        if (u.matmul_only && backend_.is_cpu())
            u.kernel = kernels::choose_matmul_kernel(u.tensor, selection, coarsest_);
        ggml_backend_buffer_type_t own = u.kernel ? u.kernel->buffer_type(u.tensor) : nullptr;
        if (own)
            by_buffer_type[own].push_back(&u);
        else if (usable_in_place(u))
            by_mapping[u.source->mapping.get()].push_back(&u);
        else
            by_buffer_type[backend_.weight_buffer_type()].push_back(&u);
    }
    for (const auto &[buft, uploads] : by_buffer_type) upload_to(buft, uploads);
    for (const auto &[mapping, uploads] : by_mapping) bind_in_place(uploads);
    for (Upload &u : uploads_) {
        if (!u.kernel) continue;
        std::unique_ptr<kernels::PackedWeight> packed = u.kernel->pack(u.tensor, selection, packed_arena_);
        if (!packed) continue;
        kernels::attach_packed(u.tensor, packed.get());
        packed_.push_back(std::move(packed));
        // Read once to pack: its pages in the file mapping are the page cache's from now on.
        const bool in_place =
            std::find(mapped_buffers_.begin(), mapped_buffers_.end(), u.tensor->buffer) != mapped_buffers_.end();
        if (in_place) {
            in_place_bytes_ -= ggml_nbytes(u.tensor);
            u.source->mapping->release(u.tensor->data, ggml_nbytes(u.tensor));
        }
    }
}

std::map<std::string, int> ModuleWeights::matmul_kernel_counts() const {
    std::map<std::string, int> counts;
    for (const Upload &u : uploads_)
        if (u.matmul_only) ++counts[u.kernel ? u.kernel->name() : "ggml_mul_mat"];
    return counts;
}

bool ModuleWeights::usable_in_place(const Upload &upload) const {
    const TensorView *source = upload.source;
    if (!source || !source->mapping || source->type != upload.tensor->type) return false;
    if (!backend_.is_cpu() || !ggml_backend_buft_is_host(backend_.weight_buffer_type())) return false;
    // ggml's CPU kernels load weights unaligned, but never below an element's natural alignment
    // (a quantised block's widest member is 4 bytes).
    const ggml_type type = source->type;
    const size_t natural = ggml_blck_size(type) == 1 ? ggml_type_size(type) : 4;
    return reinterpret_cast<uintptr_t>(source->data) % natural == 0 && source->nbytes == ggml_nbytes(upload.tensor);
}

void ModuleWeights::bind_in_place(const std::vector<Upload *> &uploads) {
    const std::shared_ptr<const MappedFile> &mapping = uploads.front()->source->mapping;
    // The mapping is read-only: weights are never written after load, and a stray write faults.
    ggml_backend_buffer_t buffer =
        ggml_backend_cpu_buffer_from_ptr(const_cast<uint8_t *>(mapping->data()), mapping->size());
    if (!buffer) fail("cannot use the weights of '", prefix_, "' in place in ", mapping->path());
    mapped_buffers_.push_back(buffer);
    mappings_.push_back(mapping);
    ggml_backend_buffer_set_usage(buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    for (Upload *u : uploads) {
        if (ggml_backend_tensor_alloc(buffer, u->tensor, const_cast<void *>(u->source->data)) != GGML_STATUS_SUCCESS)
            fail("cannot place weight ", ggml_get_name(u->tensor), " in place in ", mapping->path());
        in_place_bytes_ += ggml_nbytes(u->tensor);
    }
}

void ModuleWeights::upload_to(ggml_backend_buffer_type_t buft, const std::vector<Upload *> &uploads) {
    const size_t alignment = ggml_backend_buft_get_alignment(buft);
    size_t total = 0;
    for (const Upload *u : uploads) total += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, u->tensor), alignment);
    const size_t max_size = ggml_backend_buft_get_max_size(buft);
    if (total > max_size)
        fail("weights of '", prefix_, "' need ", total, " bytes, more than one ", ggml_backend_buft_name(buft),
             " buffer can hold (", max_size, ")");

    ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(buft, total);
    if (!buffer) fail("cannot allocate ", total, " bytes of ", ggml_backend_buft_name(buft), " for '", prefix_, "'");
    buffers_.push_back(buffer);
    ggml_backend_buffer_set_usage(buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);

    ggml_tallocr allocator = ggml_tallocr_new(buffer);
    for (Upload *u : uploads) {
        if (ggml_tallocr_alloc(&allocator, u->tensor) != GGML_STATUS_SUCCESS)
            fail("cannot place weight ", ggml_get_name(u->tensor), " in its buffer");
        if (!u->source) {
            if (u->tensor->type == GGML_TYPE_F32) {
                ggml_backend_tensor_set(u->tensor, u->values.data(), 0, ggml_nbytes(u->tensor));
            } else { // f16 or bf16 (derived())
                std::vector<uint8_t> converted(ggml_nbytes(u->tensor));
                const int64_t row = u->tensor->ne[0];
                ggml_quantize_chunk(u->tensor->type, u->values.data(), converted.data(), 0,
                                    int64_t(u->values.size()) / row, row, nullptr);
                ggml_backend_tensor_set(u->tensor, converted.data(), 0, converted.size());
            }
            u->values = {};
        } else if (u->tensor->type == u->source->type) {
            ggml_backend_tensor_set(u->tensor, u->source->data, 0, ggml_nbytes(u->tensor));
        } else {
            const std::vector<float> values = to_f32(*u->source);
            ggml_backend_tensor_set(u->tensor, values.data(), 0, ggml_nbytes(u->tensor));
        }
    }
}

size_t ModuleWeights::bytes() const {
    size_t total = in_place_bytes_;
    for (ggml_backend_buffer_t buffer : buffers_) total += ggml_backend_buffer_get_size(buffer);
    for (const auto &packed : packed_) total += packed->bytes();
    return total;
}

} // namespace chatterbox
