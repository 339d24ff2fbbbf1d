#pragma once
// This machine's own peak rates (vector FMA, bf16 and int8 dot products, memory reads), so that other
// benchmarks can state a speed as a fraction of what the CPU can do at most.

#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>

namespace chatterbox::bench {

// One rate in 1e9 units per second (GFLOP/s, GOP/s or GB/s), best of the repeats.
struct PeakRate {
    double one_thread = 0;
    double all_threads = 0; // MachinePeak::threads threads together: their total work over the slowest one's time
    std::string isa;        // the instructions it was measured with
};

struct MachinePeak {
    int threads = 0;
    PeakRate f32_fma_gflop;                     // 2 FLOP per FMA lane
    std::optional<PeakRate> bf16_dot_gflop;     // AVX-512 BF16 vdpbf16ps, 4 FLOP per f32 lane; none without it
    std::optional<PeakRate> int8_dot_gop;       // u8 x s8 products summed into int32, 2 ops per multiply-add;
                                                // none without AVX2
    PeakRate read_bandwidth_gb;                 // a buffer far larger than the caches
    bool amx_bf16 = false;                      // CPUID lists AMX-BF16 tiles (their rate is not measured)
    std::array<double, 3> load_average_start{}; // /proc/loadavg (1, 5, 15 minutes); NaN where unreadable:
    std::array<double, 3> load_average_end{};   // the rates are only valid on an otherwise idle machine
};

// Measures every rate on 1 and on `threads` threads, each kernel in the widest instruction set this CPU has.
MachinePeak measure_machine_peak(int threads);

// Prints `peak` as a table and returns it as JSON (absent rates are null).
nlohmann::json report_machine_peak(const MachinePeak &peak);

} // namespace chatterbox::bench
