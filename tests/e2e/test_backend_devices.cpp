// needs: tiny-model
// Which device the engine takes, in this build on this machine: `auto` takes a usable GPU and the CPU
// otherwise; `cuda` either runs on the GPU or fails naming why there is none (a build without a GPU
// backend, a CUDA module that cannot be loaded without the NVIDIA driver, or no device). The same
// test holds in the default build, in the CUDA build on a CPU machine and on a GPU machine.

#include "chatterbox/chatterbox.h"
#include "core/backend.h"
#include "core/error.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

using namespace chatterbox;

namespace {

// Loads the tiny model on `backend`; returns the engine's description, or the error.
struct Load {
    bool ok = false;
    std::string text;
};
Load load_tiny(const char *backend) {
    chatterbox_engine_params params = chatterbox_engine_default_params();
    const std::string model = test::tiny_model_path();
    params.model_path = model.c_str();
    params.backend = backend;
    chatterbox_engine *engine = nullptr;
    if (chatterbox_engine_load(&params, &engine) != CHATTERBOX_OK) return {false, chatterbox_last_error()};
    Load loaded{true, chatterbox_engine_description(engine)};
    chatterbox_engine_free(engine);
    return loaded;
}

bool has_gpu() { return Backend::why_no_gpu().empty(); }

TEST(BackendDevices, AutoTakesTheGpuWhenThereIsOneAndTheCpuOtherwise) {
    const Load loaded = load_tiny("auto");
    ASSERT_TRUE(loaded.ok) << loaded.text;
    std::printf("auto: %s\n", loaded.text.c_str());
    // A GPU backend describes itself as "CUDA0 (+ CPU, N threads)", the CPU as "CPU (N threads)".
    EXPECT_EQ(loaded.text.find("(+ CPU") != std::string::npos, has_gpu()) << loaded.text;
}

TEST(BackendDevices, CudaRunsOnTheGpuOrSaysWhyThereIsNone) {
    const Load loaded = load_tiny("cuda");
    const std::string why = Backend::why_no_gpu();
    if (has_gpu()) {
        EXPECT_TRUE(loaded.ok) << loaded.text;
        EXPECT_TRUE(why.empty()) << why;
        return;
    }
    std::printf("cuda: %s\n", loaded.text.c_str());
    EXPECT_FALSE(loaded.ok);
    ASSERT_FALSE(why.empty());
    EXPECT_TRUE(test::contains(loaded.text, "backend 'cuda' is not available: " + why));
#ifdef GGML_BACKEND_DL
    EXPECT_TRUE(test::contains(why, "libggml-cuda.so")); // the module, and why it gave no device
#else
    EXPECT_TRUE(test::contains(why, "no GPU backend"));
#endif
    test::expect_error([] { Backend backend(BackendOptions{"cuda", 1}); }, why);
}

// The command line in a CUDA build on a machine whose NVIDIA driver library is there but finds no GPU:
// the CUDA toolkit's stub libcuda.so stands in for the driver (it answers every call with an error).
TEST(BackendDevices, WithADriverButNoGpuAutoRunsOnTheCpuAndCudaSaysSo) {
#ifndef GGML_BACKEND_DL
    GTEST_SKIP() << "a build without loadable backends";
#else
    namespace fs = std::filesystem;
    const fs::path stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (has_gpu()) GTEST_SKIP() << "this machine has a GPU";
    if (!fs::exists(stub)) GTEST_SKIP() << "no CUDA toolkit stub driver at " << stub;
    const std::string drivers = test::temp_dir("stub-driver");
    fs::create_symlink(stub, fs::path(drivers) / "libcuda.so.1");
    test::ToolInput input;
    input.env = {"LD_LIBRARY_PATH=" + drivers};
    const std::string out = drivers + "/out.wav";
    const test::ToolRun cuda =
        test::run_tool("chatterbox", {"-m", test::tiny_model_path(), "--backend", "cuda", "-o", out, "Hello."}, input);
    EXPECT_EQ(cuda.exit_code, 1) << cuda.err;
    EXPECT_TRUE(test::contains(cuda.err, "backend 'cuda' is not available: "));
    EXPECT_TRUE(test::contains(cuda.err, "libggml-cuda.so found no CUDA device"));
    EXPECT_FALSE(fs::exists(out));
    const test::ToolRun automatic =
        test::run_tool("chatterbox", {"-m", test::tiny_model_path(), "--backend", "auto", "-o", out, "Hello."}, input);
    EXPECT_EQ(automatic.exit_code, 0) << automatic.err;
    EXPECT_TRUE(test::contains(automatic.err, "CPU (")); // the model line names the device
    EXPECT_TRUE(fs::exists(out));
    std::printf("cuda: %s", cuda.err.c_str());
#endif
}

TEST(BackendDevices, TheCpuBackendReportsItsInstructionSets) {
    // What ggml's CPU backend was built for; a build that runs here was built for what this CPU has.
    EXPECT_EQ(Backend::cpu_has_feature("AVX2"), bool(__builtin_cpu_supports("avx2")));
    EXPECT_FALSE(Backend::cpu_has_feature("NO_SUCH_FEATURE"));
}

} // namespace
