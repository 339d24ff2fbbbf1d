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
#include <vector>

namespace chatterbox {

// Which of the CPU's weight-product kernels (kernels/matmul_kernel.h) the weights bound on a backend
// may take, by the kernels' names ("q4k_avx512_vnni", "q4k_avx2", "ggml_repack", "onednn_f32"): each
// runs only where CPUID says the CPU can. Checked when weights are bound (kernels::check_kernel_selection).
struct KernelSelection {
    std::vector<std::string> enable;  // kernels that are off by default, turned on (onednn_f32)
    std::vector<std::string> disable; // kernels left out (for comparisons): ggml_mul_mat takes their weights
    // Rows multiplied into each unpacked weight register of the int8 tile kernels (q4_K, q8_0: 1-8,
    // at most the format's limit in the instruction set; 0: the CPU's default, kernels/int8_tiles.cpp).
    // A row's result is the same bits for any.
    int tile_rows_per_pass = 0;
};

struct BackendOptions {
    std::string device = "cpu"; // "cpu", "cuda" (first GPU) or "gpu"
    int threads = 0;            // CPU threads; 0 = all hardware threads
    // Before each graph the CPU thread count drops by the CPUs other processes keep busy (two threads
    // on one free core run far slower than one: core/cpu_contention.h); off keeps `threads` always
    // (for benchmarks that compare like with like).
    bool adapt_threads = true;
    // The CPU kernels of the weight products bound on this backend (none on a GPU backend).
    KernelSelection kernels;
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
    const KernelSelection &kernels() const { return kernels_; }

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
    // ggml's CPU device, and a function of its CPU backend by name (in a build with loadable
    // backends it is not linked); throws where there is none.
    static ggml_backend_dev_t cpu_device();
    static void *cpu_backend_function(const char *name);

  private:
    struct Free {
        void operator()(ggml_backend_t backend) const { ggml_backend_free(backend); }
    };
    // Owned, so that a constructor that fails half-way frees what it made (the GPU backend is freed first).
    std::unique_ptr<ggml_backend, Free> cpu_, gpu_;
    ggml_backend_t main_ = nullptr; // gpu_, or cpu_ on the CPU
    int threads_ = 1;
    bool adapt_threads_ = true;
    KernelSelection kernels_;
    CpuContention contention_;
    int threads_last_compute_ = 0;
};

} // namespace chatterbox
