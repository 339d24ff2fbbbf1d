#include "core/backend.h"

#include "core/error.h"
#include "core/heap_policy.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#ifdef GGML_BACKEND_DL
#include <dlfcn.h>
#include <filesystem>
#include <system_error>
#endif

namespace chatterbox {

namespace {

// What ggml logs while the backends load: the information (the devices found) apart from the
// problems (why a module gave no device).
struct LoadLog {
    std::string info, problems;
};

// ggml's default logger prints every level; its debug lines (one per repacked weight ...) are noise
// to a user. Continuation lines follow the level of the line they continue. While `capture` is set
// (on the thread that loads the backends) the lines go there instead.
thread_local LoadLog *capture = nullptr;
void log_without_debug(ggml_log_level level, const char *text, void *) {
    static thread_local ggml_log_level last = GGML_LOG_LEVEL_INFO;
    if (level != GGML_LOG_LEVEL_CONT) last = level;
    if (last == GGML_LOG_LEVEL_DEBUG) return;
    if (capture)
        (last >= GGML_LOG_LEVEL_WARN ? capture->problems : capture->info) += text;
    else
        std::fputs(text, stderr);
}

// What the process knows about its devices, found once: in a build with loadable backends
// (GGML_BACKEND_DL) the modules are loaded here; a static build has them registered already.
struct Devices {
    ggml_backend_reg_t cpu = nullptr;
    ggml_backend_dev_t gpu = nullptr; // the first GPU, if any
    std::string why_no_gpu;           // for the error of --backend cuda
};

#ifdef GGML_BACKEND_DL
// Where the modules are looked for: $CHATTERBOX_BACKEND_DIR alone when set, else the running
// program's folder, then the build folder (so tests in its subfolders find them).
std::vector<std::filesystem::path> module_folders() {
    if (const char *dir = std::getenv("CHATTERBOX_BACKEND_DIR"); dir && *dir) return {dir};
    std::vector<std::filesystem::path> folders;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) folders.push_back(exe.parent_path());
    folders.emplace_back(CHATTERBOX_BACKEND_BUILD_DIR);
    return folders;
}

std::filesystem::path find_module(const std::vector<std::filesystem::path> &folders, const std::string &file) {
    for (const auto &folder : folders) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(folder / file, ec)) return folder / file;
    }
    return {};
}

std::string folder_list(const std::vector<std::filesystem::path> &folders) {
    std::string list;
    for (const auto &folder : folders) list += (list.empty() ? "" : ", ") + folder.string();
    return list;
}

// Loads a backend module; what ggml logs meanwhile goes to `log`. A module ggml cannot open is
// only logged by it, so dlopen is asked first, for the reason.
ggml_backend_reg_t load_module(const std::filesystem::path &path, LoadLog &log, std::string &why_not) {
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *error = dlerror();
        why_not = concat(path.string(), " cannot be loaded: ", error ? error : "unknown error");
        return nullptr;
    }
    capture = &log;
    ggml_backend_reg_t reg = ggml_backend_load(path.c_str());
    capture = nullptr;
    dlclose(handle); // ggml holds its own reference
    if (!reg) why_not = concat(path.string(), " did not initialise: ", log.problems);
    return reg;
}
#endif

ggml_backend_dev_t first_gpu() {
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_GPU) return dev;
    }
    return nullptr;
}

Devices find_devices() {
    Devices found;
#ifdef GGML_BACKEND_DL
    const std::vector<std::filesystem::path> folders = module_folders();
    const std::filesystem::path cpu_module = find_module(folders, "libggml-cpu.so");
    if (cpu_module.empty()) fail("cannot find ggml's CPU backend, libggml-cpu.so, in ", folder_list(folders));
    LoadLog log;
    std::string why_not;
    if (!load_module(cpu_module, log, why_not)) fail(why_not);
    const std::filesystem::path cuda_module = find_module(folders, "libggml-cuda.so");
    if (cuda_module.empty()) {
        found.why_no_gpu =
            concat("this build has no CUDA backend (libggml-cuda.so is not in ", folder_list(folders), ")");
    } else {
        log = {};
        // ggml's cuBLAS handles allow TF32 (10-bit mantissas) in f32 products, which leaves the golden
        // tolerances 10-25x behind (flow encoder 2.5e-3 against 1e-4 on an H200); NVIDIA's own switch
        // turns that off unless the user set it. Read by cuBLAS, which the module loads.
        setenv("NVIDIA_TF32_OVERRIDE", "0", /*overwrite=*/0);
        ggml_backend_reg_t cuda = load_module(cuda_module, log, found.why_no_gpu);
        if (cuda && ggml_backend_reg_dev_count(cuda) == 0)
            found.why_no_gpu = concat(cuda_module.string(), " found no CUDA device: ", log.problems);
        else if (cuda)
            std::fputs((log.info + log.problems).c_str(), stderr); // the devices it found
    }
#else
    found.why_no_gpu = "this build has no GPU backend (configure with -DCHATTERBOX_CUDA=ON)";
#endif
    found.cpu = ggml_backend_dev_backend_reg(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
    if (!found.cpu) fail("ggml has no CPU backend");
    found.gpu = first_gpu();
    while (!found.why_no_gpu.empty() && (found.why_no_gpu.back() == '\n' || found.why_no_gpu.back() == ' '))
        found.why_no_gpu.pop_back();
    return found;
}

const Devices &devices() {
    static std::once_flag logger_set; // process-wide in ggml: set once, before any backend logs
    std::call_once(logger_set, [] { ggml_log_set(log_without_debug, nullptr); });
    static const Devices found = find_devices();
    return found;
}

// A function of the CPU backend found by name: in a build with loadable backends it is not linked.
template <typename Function> Function cpu_function(const char *name) {
    auto function = reinterpret_cast<Function>(ggml_backend_reg_get_proc_address(devices().cpu, name));
    if (!function) fail("ggml's CPU backend has no ", name);
    return function;
}

void set_cpu_threads(ggml_backend_t cpu, int threads) {
    static const auto set_n_threads = cpu_function<ggml_backend_set_n_threads_t>("ggml_backend_set_n_threads");
    set_n_threads(cpu, threads);
}

bool cancel_requested(void *flag) { return static_cast<const CancelFlag *>(flag)->requested(); }

int resolved_threads(int requested) {
    return requested > 0 ? requested : int(std::max(1u, std::thread::hardware_concurrency()));
}

} // namespace

Backend::Backend(const BackendOptions &options)
    : threads_(resolved_threads(options.threads)), adapt_threads_(options.adapt_threads), kernels_(options.kernels),
      contention_(threads_) {
    keep_large_buffers_off_the_heap();
    const Devices &found = devices();
    cpu_.reset(ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr));
    if (!cpu_) fail("cannot initialise the ggml CPU backend");
    set_cpu_threads(cpu(), threads_);
    if (options.device == "cpu") {
        main_ = cpu();
    } else if (options.device == "cuda" || options.device == "gpu") {
        if (!found.gpu) fail("backend '", options.device, "' is not available: ", found.why_no_gpu);
        gpu_.reset(ggml_backend_dev_init(found.gpu, nullptr));
        if (!gpu_) fail("cannot initialise GPU device ", ggml_backend_dev_name(found.gpu));
        main_ = gpu_.get();
    } else {
        fail("unknown backend '", options.device, "' (this build can use: ", available_devices(), ")");
    }
}

std::string Backend::description() const {
    if (is_cpu()) return concat("CPU (", threads_, " threads)");
    return concat(ggml_backend_name(main_), " (+ CPU, ", threads_, " threads)");
}

ggml_backend_buffer_type_t Backend::weight_buffer_type() const { return ggml_backend_get_default_buffer_type(main_); }

void Backend::prepare_compute() {
    const int threads = adapt_threads_ ? contention_.threads_now() : threads_; // 1 .. threads_
    if (threads != threads_last_compute_) set_cpu_threads(cpu(), threads);
    threads_last_compute_ = threads;
}

void Backend::set_cancel_flag(const CancelFlag *flag) {
    static const auto set_abort_callback =
        cpu_function<ggml_backend_set_abort_callback_t>("ggml_backend_set_abort_callback");
    set_abort_callback(cpu(), flag ? cancel_requested : nullptr, const_cast<CancelFlag *>(flag));
}

std::string Backend::available_devices() { return devices().gpu ? "cpu, cuda" : "cpu"; }

std::string Backend::why_no_gpu() { return devices().why_no_gpu; }

ggml_backend_dev_t Backend::cpu_device() { return ggml_backend_reg_dev_get(devices().cpu, 0); }

void *Backend::cpu_backend_function(const char *name) { return cpu_function<void *>(name); }

bool Backend::cpu_has_feature(const std::string &name) {
    static const auto features = cpu_function<ggml_backend_get_features_t>("ggml_backend_get_features");
    for (const ggml_backend_feature *f = features(devices().cpu); f && f->name; ++f)
        if (name == f->name) return std::string(f->value) != "0";
    return false;
}

} // namespace chatterbox
