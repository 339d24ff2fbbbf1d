#include "core/backend.h"

#include "core/error.h"

#include "ggml-cpu.h"

#include <thread>

namespace chatterbox {

namespace {

ggml_backend_dev_t find_gpu() {
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_GPU) return dev;
    }
    return nullptr;
}

} // namespace

Backend::Backend(const BackendOptions &options) {
    threads_ = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    cpu_ = ggml_backend_cpu_init();
    if (!cpu_) fail("cannot initialise the ggml CPU backend");
    ggml_backend_cpu_set_n_threads(cpu_, threads_);
    if (options.device == "cpu") {
        main_ = cpu_;
    } else if (options.device == "cuda" || options.device == "gpu") {
        ggml_backend_dev_t dev = find_gpu();
        if (!dev)
            fail("backend '", options.device, "' is not available: no GPU device found (this build can use: ",
                 available_devices(), ")");
        main_ = ggml_backend_dev_init(dev, nullptr);
        if (!main_) fail("cannot initialise GPU device ", ggml_backend_dev_name(dev));
    } else {
        fail("unknown backend '", options.device, "' (this build can use: ", available_devices(), ")");
    }
}

Backend::~Backend() {
    if (main_ && main_ != cpu_) ggml_backend_free(main_);
    if (cpu_) ggml_backend_free(cpu_);
}

std::string Backend::description() const {
    if (is_cpu()) return concat("CPU (", threads_, " threads)");
    return concat(ggml_backend_name(main_), " (+ CPU, ", threads_, " threads)");
}

ggml_backend_buffer_type_t Backend::weight_buffer_type() const { return ggml_backend_get_default_buffer_type(main_); }

std::string Backend::available_devices() {
    std::string names = "cpu";
    if (find_gpu()) names += ", cuda";
    return names;
}

} // namespace chatterbox
