#pragma once
// Backend choice: the CPU (with a thread count) or a GPU backend when ggml was built with one.

#include "ggml-backend.h"

#include <string>

namespace chatterbox {

struct BackendOptions {
    std::string device = "cpu"; // "cpu", "cuda" (first GPU) or "gpu"
    int threads = 0;            // CPU threads; 0 = all hardware threads
};

class Backend {
public:
    explicit Backend(const BackendOptions &options = {}); // throws when the device is not available
    ~Backend();
    Backend(const Backend &) = delete;
    Backend &operator=(const Backend &) = delete;

    ggml_backend_t main() const { return main_; } // where graphs run and weights live
    ggml_backend_t cpu() const { return cpu_; }   // fallback for ops the main backend lacks
    bool is_cpu() const { return main_ == cpu_; }
    int threads() const { return threads_; }
    std::string description() const; // e.g. "CPU (2 threads)"
    ggml_backend_buffer_type_t weight_buffer_type() const;

    // Names of the devices this build can use ("cpu", "cuda" ...), for --help and errors.
    static std::string available_devices();

private:
    ggml_backend_t main_ = nullptr;
    ggml_backend_t cpu_ = nullptr;
    int threads_ = 1;
};

} // namespace chatterbox
