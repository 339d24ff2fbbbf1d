#pragma once
// Arithmetic of ggml graphs counted from their nodes' shapes (2 FLOPs per multiply-add): matrix
// products (ggml's and the engine's kernels') and attention. Element-wise work (norms, activations,
// im2col copies) is left out: it is not what bounds a compute-bound stage.

#include "core/graph.h"

#include "ggml.h"

#include <map>
#include <mutex>
#include <string>

namespace chatterbox::bench {

struct NodeFlops {
    double matmul = 0;    // weight and activation products
    double attention = 0; // Q·Kᵀ and P·V
    double total() const { return matmul + attention; }
};

// One node: a mul_mat of src0 [K, M] by src1 [K, N, ...] is 2·K·M·N·batch; flash attention over
// q [D, Tq, H, R] and k, v [D, Tk, H, R] is 2·D·Tq·Tk·H·R for the scores plus as much for P·V; the
// engine's custom products and blocked attention alike.
NodeFlops node_flops(const ggml_tensor *node);
NodeFlops graph_flops(const ggml_cgraph *graph);

// Adds up the FLOPs of every graph computed while it observes (core/graph.h), under the stage that
// set_stage named last.
class StageFlops final : public ComputeObserver {
  public:
    StageFlops() { observe_computes(this); }
    ~StageFlops() override { observe_computes(nullptr); }
    StageFlops(const StageFlops &) = delete;
    StageFlops &operator=(const StageFlops &) = delete;

    void set_stage(const std::string &stage);
    void computed(const ggml_cgraph *graph) override;
    double flops(const std::string &stage) const;

  private:
    mutable std::mutex mutex_;
    std::string stage_;
    std::map<std::string, double> flops_;
};

} // namespace chatterbox::bench
