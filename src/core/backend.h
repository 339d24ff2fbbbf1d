#pragma once
// Backend choice: the CPU (with a thread count) or a GPU backend when ggml was built with one. A CUDA
// build has ggml's backends as modules loaded at run time, so it also runs where CUDA cannot.
// A Backend is where graphs run; it is not safe for concurrent computes (ggml's CPU backend keeps one
// work buffer), so every session owns one. Weights uploaded through one Backend can be used by the
// graphs of any other Backend of the same device.

#include "core/cancel.h"
#include "core/cpu_contention.h"

#include "ggml-backend.h"

#include <memory>
#include <string>

namespace chatterbox {

// How products of an f32 weight matrix with activations run on the CPU backend.
enum class MatmulRoute {
    ggml,   // ggml_mul_mat (llamafile's tinyBLAS): the reference the golden tests check
    onednn, // oneDNN's f32 GEMM as a ggml custom op (kernels/onednn.h); faster on AVX2 (bench/README.md)
};
const char *matmul_route_name(MatmulRoute route);
MatmulRoute parse_matmul_route(const std::string &name); // "ggml" or "onednn"; throws InvalidArgument otherwise

struct BackendOptions {
    std::string device = "cpu"; // "cpu", "cuda" (first GPU) or "gpu"
    int threads = 0;            // CPU threads; 0 = all hardware threads
    // Quantised matmul weights on the CPU go to ggml's repacked layout where the CPU has kernels
    // for their type (q4_K, q4_0 ... on AVX2); off keeps the plain layout (for comparisons).
    bool repack_weights = true;
    // With repack_weights, q4_K matmul weights on a CPU with AVX2 or AVX-512 VNNI take the engine's own
    // layout and kernels (kernels/q4k.h: faster than ggml's, most for several rows at once, and a
    // row's result does not depend on the others); off leaves them to ggml's repack (for comparisons).
    bool q4k_kernels = true;
    // Before each graph the CPU thread count drops by the CPUs other processes keep busy (two threads
    // on one free core run far slower than one: core/cpu_contention.h); off keeps `threads` always
    // (for benchmarks that compare like with like).
    bool adapt_threads = true;
    // Route of the f32 weight products of every module bound on this backend (Linear, Conv1d).
    // onednn needs a build with oneDNN; on a GPU backend the products stay ggml's.
    MatmulRoute matmul_route = MatmulRoute::ggml;
};

class Backend {
  public:
    explicit Backend(const BackendOptions &options = {}); // throws when the device is not available
    Backend(const Backend &) = delete;
    Backend &operator=(const Backend &) = delete;

    ggml_backend_t main() const { return main_; }     // where graphs run and weights live
    ggml_backend_t cpu() const { return cpu_.get(); } // fallback for ops the main backend lacks
    bool is_cpu() const { return main_ == cpu_.get(); }
    int threads() const { return threads_; }
    std::string description() const; // e.g. "CPU (2 threads)"
    ggml_backend_buffer_type_t weight_buffer_type() const;
    // Where a weight used only as ggml_mul_mat's first operand runs fastest: the CPU's repack buffer
    // type when it can multiply it (checked with ggml's own supports_op), or nullptr for
    // weight_buffer_type(). Only quantised weights on the CPU backend qualify.
    ggml_backend_buffer_type_t matmul_weight_buffer_type(const ggml_tensor *weight) const;
    // Whether a weight used only as a matmul operand goes to the engine's q4_K kernels (BackendOptions::
    // q4k_kernels): then it stays in the plain layout (matmul_weight_buffer_type is nullptr) and its
    // owner packs a copy.
    bool packs_q4k(const ggml_tensor *weight) const;
    // The route for the f32 weight products of modules bound here (ggml on a GPU backend).
    MatmulRoute matmul_route() const { return is_cpu() ? matmul_route_ : MatmulRoute::ggml; }

    // Called before each graph computation: sets the CPU threads for it (see adapt_threads).
    void prepare_compute();
    int threads_last_compute() const { return threads_last_compute_; }

    // Graphs computed on this backend stop between two nodes once `flag` is requested (CPU; other
    // devices stop between graphs) and GraphRunner::compute then throws Cancelled. nullptr: never.
    void set_cancel_flag(const CancelFlag *flag);

    // Names of the devices this process can use ("cpu", "cuda" ...), for --help and errors. The first
    // call finds them: a build with loadable backends (GGML_BACKEND_DL) loads its modules then.
    static std::string available_devices();
    // Why there is no GPU ("" when there is one): no GPU backend in the build, a module that cannot
    // be loaded (no driver), or no device.
    static std::string why_no_gpu();
    // Whether the CPU backend has an instruction set feature by ggml's name ("AVX2", "AMX_INT8" ...).
    static bool cpu_has_feature(const std::string &name);

  private:
    struct Free {
        void operator()(ggml_backend_t backend) const { ggml_backend_free(backend); }
    };
    // Owned, so that a constructor that fails half-way frees what it made (the GPU backend is freed first).
    std::unique_ptr<ggml_backend, Free> cpu_, gpu_;
    ggml_backend_t main_ = nullptr; // gpu_, or cpu_ on the CPU
    int threads_ = 1;
    bool repack_weights_ = true;
    bool q4k_kernels_ = true;
    bool adapt_threads_ = true;
    MatmulRoute matmul_route_ = MatmulRoute::ggml;
    CpuContention contention_;
    int threads_last_compute_ = 0;
};

} // namespace chatterbox
