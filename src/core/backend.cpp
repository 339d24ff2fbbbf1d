#include "core/backend.h"

#include "core/error.h"
#include "kernels/onednn.h"

#include "ggml-cpu.h"

#include <cstdio>
#include <mutex>
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

// ggml's default logger prints every level; its debug lines (one per repacked weight ...) are noise
// to a user. Continuation lines follow the level of the line they continue.
void log_without_debug(ggml_log_level level, const char *text, void *) {
    static thread_local ggml_log_level last = GGML_LOG_LEVEL_INFO;
    if (level != GGML_LOG_LEVEL_CONT) last = level;
    if (last == GGML_LOG_LEVEL_DEBUG) return;
    std::fputs(text, stderr);
}

bool cancel_requested(void *flag) { return static_cast<const CancelFlag *>(flag)->requested(); }

int resolved_threads(int requested) {
    return requested > 0 ? requested : int(std::max(1u, std::thread::hardware_concurrency()));
}

} // namespace

const char *matmul_route_name(MatmulRoute route) { return route == MatmulRoute::onednn ? "onednn" : "ggml"; }

MatmulRoute parse_matmul_route(const std::string &name) {
    if (name == "ggml") return MatmulRoute::ggml;
    if (name == "onednn") return MatmulRoute::onednn;
    throw InvalidArgument(concat("unknown matmul route '", name, "' (ggml or onednn)"));
}

Backend::Backend(const BackendOptions &options)
    : threads_(resolved_threads(options.threads)), repack_weights_(options.repack_weights),
      adapt_threads_(options.adapt_threads), matmul_route_(options.matmul_route), contention_(threads_) {
    static std::once_flag logger_set; // process-wide in ggml: set once, not per backend
    std::call_once(logger_set, [] { ggml_log_set(log_without_debug, nullptr); });
    if (matmul_route_ == MatmulRoute::onednn && !kernels::onednn_available())
        fail("matmul route 'onednn' is not available: this build has no oneDNN");
    cpu_ = ggml_backend_cpu_init();
    if (!cpu_) fail("cannot initialise the ggml CPU backend");
    ggml_backend_cpu_set_n_threads(cpu_, threads_);
    if (options.device == "cpu") {
        main_ = cpu_;
    } else if (options.device == "cuda" || options.device == "gpu") {
        ggml_backend_dev_t dev = find_gpu();
        if (!dev)
            fail("backend '", options.device,
                 "' is not available: no GPU device found (this build can use: ", available_devices(), ")");
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

ggml_backend_buffer_type_t Backend::matmul_weight_buffer_type(const ggml_tensor *weight) const {
    if (!is_cpu() || !repack_weights_ || !ggml_is_quantized(weight->type)) return nullptr;
    ggml_backend_dev_t dev = ggml_backend_get_device(cpu_);
    auto extra_buffer_types = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev), "ggml_backend_dev_get_extra_bufts"));
    if (!extra_buffer_types) return nullptr;

    // The product this weight takes part in, with the weight in an empty buffer of the candidate
    // type: the extra buffer types decide support by buffer, type and shape.
    ggml_init_params params{3 * ggml_tensor_overhead(), nullptr, /*no_alloc=*/true};
    ggml_context *ctx = ggml_init(params);
    if (!ctx) fail("cannot create a ggml context");
    ggml_tensor *w = ggml_new_tensor(ctx, weight->type, GGML_MAX_DIMS, weight->ne);
    ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, weight->ne[0], 2);
    ggml_tensor *product = ggml_mul_mat(ctx, w, x);
    ggml_backend_buffer_type_t chosen = nullptr;
    for (ggml_backend_buffer_type_t *buft = extra_buffer_types(dev); buft && *buft && !chosen; ++buft) {
        // Only the repacked AVX layouts. ggml's AMX buffer (usable since cmake/gcc12-amx fixes GCC 12's
        // tile-config miscompile) is not measured against them at T3's two decode columns, and its
        // kernels die when other AMX code (oneDNN) ran on the same thread before them.
        if (std::string(ggml_backend_buft_name(*buft)) != "CPU_REPACK") continue;
        ggml_backend_buffer_t probe = ggml_backend_buft_alloc_buffer(*buft, 0);
        if (!probe) continue;
        w->buffer = probe;
        if (ggml_backend_dev_supports_op(dev, product)) chosen = *buft;
        w->buffer = nullptr;
        ggml_backend_buffer_free(probe);
    }
    ggml_free(ctx);
    return chosen;
}

void Backend::prepare_compute() {
    const int threads = adapt_threads_ ? contention_.threads_now() : threads_;
    if (threads != threads_last_compute_) ggml_backend_cpu_set_n_threads(cpu_, threads);
    threads_last_compute_ = threads;
}

void Backend::set_cancel_flag(const CancelFlag *flag) {
    ggml_backend_cpu_set_abort_callback(cpu_, flag ? cancel_requested : nullptr, const_cast<CancelFlag *>(flag));
}

std::string Backend::available_devices() {
    std::string names = "cpu";
    if (find_gpu()) names += ", cuda";
    return names;
}

} // namespace chatterbox
