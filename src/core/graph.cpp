#include "core/graph.h"

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/shape.h"

#include "ggml-backend.h"

#include <algorithm>
#include <atomic>
#include <vector>

namespace chatterbox {

namespace {

// Asks for huge pages in the host compute buffers the graph's tensors were placed in. Each is a
// fresh mapping (core/heap_policy.h maps blocks of 1 MiB and more) that the computation touches
// first: a page fault per 2 MiB instead of one per 4 KiB, which on a VM costs an exit each.
void advise_huge_compute_buffers(ggml_cgraph *graph) {
    std::vector<ggml_backend_buffer_t> advised;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        ggml_backend_buffer_t buffer = ggml_graph_node(graph, i)->buffer;
        if (!buffer || ggml_backend_buffer_get_usage(buffer) != GGML_BACKEND_BUFFER_USAGE_COMPUTE ||
            !ggml_backend_buffer_is_host(buffer) || std::count(advised.begin(), advised.end(), buffer))
            continue;
        advise_huge_pages(ggml_backend_buffer_get_base(buffer), ggml_backend_buffer_get_size(buffer));
        advised.push_back(buffer);
    }
}

} // namespace

GraphRunner::GraphRunner(Backend &backend, size_t max_nodes) : backend_(backend), max_nodes_(max_nodes) {
    ggml_init_params params{ggml_tensor_overhead() * max_nodes + ggml_graph_overhead_custom(max_nodes, false),
                            nullptr, /*no_alloc=*/true};
    ctx_ = ggml_init(params);
    if (!ctx_) fail("cannot create a ggml context for a graph of ", max_nodes, " nodes");
}

GraphRunner::~GraphRunner() {
    if (sched_) ggml_backend_sched_free(sched_);
    if (ctx_) ggml_free(ctx_);
}

ggml_tensor *GraphRunner::input(const std::string &name, ggml_type type, const Shape &torch_shape) {
    if (graph_) fail("GraphRunner::input(", name, ") after build()");
    ggml_tensor *t = new_tensor_torch(ctx_, type, torch_shape);
    ggml_set_name(t, name.c_str());
    ggml_set_input(t);
    // Also an output: otherwise the allocator may reuse an input's memory once it has been read,
    // and an input written once would be garbage on the next compute().
    ggml_set_output(t);
    return t;
}

void GraphRunner::build(const std::vector<ggml_tensor *> &outputs) {
    if (graph_) fail("GraphRunner::build() called twice");
    graph_ = ggml_new_graph_custom(ctx_, max_nodes_, false);
    for (ggml_tensor *t : outputs) {
        ggml_set_output(t);
        ggml_build_forward_expand(graph_, t);
    }
    outputs_ = outputs;

    ggml_backend_t backends[2] = {backend_.main(), backend_.cpu()};
    const int n_backends = backend_.is_cpu() ? 1 : 2;
    sched_ = ggml_backend_sched_new(backends, nullptr, n_backends, max_nodes_, false, true);
    if (!sched_) fail("cannot create a ggml scheduler");
    if (!ggml_backend_sched_alloc_graph(sched_, graph_)) fail("cannot allocate the compute graph");
    advise_huge_compute_buffers(graph_);
}

void GraphRunner::set_input(ggml_tensor *input, const void *data, size_t nbytes) {
    if (!graph_) fail("GraphRunner::set_input before build()");
    if (nbytes != ggml_nbytes(input))
        fail("input ", ggml_get_name(input), ": got ", nbytes, " bytes, expected ", ggml_nbytes(input));
    ggml_backend_tensor_set(input, data, 0, nbytes);
}

void GraphRunner::set_input(ggml_tensor *input, const std::vector<float> &values) {
    if (input->type != GGML_TYPE_F32) fail("input ", ggml_get_name(input), " is not f32");
    set_input(input, values.data(), values.size() * sizeof(float));
}

void GraphRunner::set_input(ggml_tensor *input, const std::vector<int32_t> &values) {
    if (input->type != GGML_TYPE_I32) fail("input ", ggml_get_name(input), " is not i32");
    set_input(input, values.data(), values.size() * sizeof(int32_t));
}

namespace {
std::atomic<ComputeObserver *> &compute_observer() {
    static std::atomic<ComputeObserver *> observer{nullptr};
    return observer;
}
} // namespace

void observe_computes(ComputeObserver *observer) { compute_observer() = observer; }

void GraphRunner::compute() {
    if (!graph_) fail("GraphRunner::compute before build()");
    backend_.prepare_compute();
    const ggml_status status = ggml_backend_sched_graph_compute(sched_, graph_);
    if (status == GGML_STATUS_ABORTED) throw Cancelled("cancelled");
    if (status != GGML_STATUS_SUCCESS) fail("graph computation failed (", ggml_status_to_string(status), ")");
    if (ComputeObserver *observer = compute_observer().load(std::memory_order_relaxed)) observer->computed(graph_);
}

std::vector<float> GraphRunner::read_f32(const ggml_tensor *t) const {
    if (!ggml_is_contiguous(t)) fail("output ", ggml_get_name(t), " is not contiguous");
    std::vector<uint8_t> raw(ggml_nbytes(t));
    ggml_backend_tensor_get(t, raw.data(), 0, raw.size());
    TensorView view{ggml_get_name(t), t->type, torch_shape_of(t), raw.data(), raw.size()};
    return to_f32(view);
}

int GraphRunner::n_nodes() const { return graph_ ? ggml_graph_n_nodes(graph_) : 0; }

} // namespace chatterbox
