#pragma once
// A compute graph that is built once and run many times. Inputs and outputs are persistent
// tensors: write inputs, compute, read outputs, again and again without rebuilding.
//
//   GraphRunner g(backend);
//   ggml_tensor *x = g.input("x", GGML_TYPE_F32, {T, 80});
//   g.build(some_module(g.ctx(), x));        // the output(s)
//   g.set_input(x, data); g.compute(); g.read_output(0, out);

#include "core/backend.h"
#include "core/tensor.h"

#include "ggml.h"

#include <vector>

namespace chatterbox {

// Told of every graph a GraphRunner computes in this process (after it ran), for benchmarks that
// count the work of a stage (FLOPs from the nodes' shapes). Set while no graph runs; nullptr: none.
class ComputeObserver {
  public:
    virtual ~ComputeObserver() = default;
    virtual void computed(const ggml_cgraph *graph) = 0;
};
void observe_computes(ComputeObserver *observer);

class GraphRunner {
public:
    static constexpr size_t kDefaultMaxNodes = 16384; // tensors (and nodes) the graph may hold
    explicit GraphRunner(Backend &backend, size_t max_nodes = kDefaultMaxNodes);
    ~GraphRunner();
    GraphRunner(const GraphRunner &) = delete;
    GraphRunner &operator=(const GraphRunner &) = delete;

    // Context for building the graph (no_alloc: tensors get memory when the graph is built).
    ggml_context *ctx() const { return ctx_; }
    // A persistent input tensor (PyTorch-order shape).
    ggml_tensor *input(const std::string &name, ggml_type type, const Shape &torch_shape);
    // Marks the outputs, allocates every tensor of the graph. Call once.
    void build(const std::vector<ggml_tensor *> &outputs);
    bool built() const { return graph_ != nullptr; }

    void set_input(ggml_tensor *input, const void *data, size_t nbytes);
    void set_input(ggml_tensor *input, const std::vector<float> &values);
    void set_input(ggml_tensor *input, const std::vector<int32_t> &values);
    void compute();

    const std::vector<ggml_tensor *> &outputs() const { return outputs_; }
    std::vector<float> read_f32(const ggml_tensor *t) const; // t: an output (f32 or f16)
    int n_nodes() const;

private:
    Backend &backend_;
    ggml_context *ctx_ = nullptr;
    ggml_cgraph *graph_ = nullptr;
    ggml_backend_sched_t sched_ = nullptr;
    std::vector<ggml_tensor *> outputs_;
    size_t max_nodes_;
};

} // namespace chatterbox
