#include "machine_peak.h"

#include "core/error.h"
#include "memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace chatterbox::bench {

namespace {

// Independent accumulator chains per loop step: at least latency x issue rate of the instruction timed
// (Zen 5: FMA 4 cycles x 2 per cycle, vdpbf16ps 6 x 2), so that none waits on the one before it in its
// chain, yet few enough to stay in registers beside the operands: 32 zmm, or 16 ymm or xmm.
constexpr int kChainsIn32Registers = 16;
constexpr int kChainsIn16Registers = 12;
constexpr double kRepeatSeconds = 0.08; // per timed run: thread start-up and timer noise stay far below 1%
constexpr int kRepeats = 5;
constexpr size_t kBandwidthBytes = size_t(1) << 30; // 32x the L3 of a large server part: memory, not cache

// A timed loop: `steps` steps of one instruction per chain; returns a value of every accumulator, so that
// the work cannot be optimised away.
using KernelLoop = double (*)(int64_t steps);

struct Kernel {
    KernelLoop loop;
    double ops_per_step; // FLOP or integer operations, all chains together
    const char *isa;
};

// Every kernel's chains start apart, so that no compiler merges them. The multiply-add chains start above
// offset / (1 - scale) = 1, so that none is a constant the compiler can fold, and settle there: no
// denormals and no overflow, however many steps.
constexpr float kScale = 0.999f, kOffset = 0.001f;

// Accumulators as vectors of their own lane type: __m512i and __m256i hold 64-bit lanes, and GCC 12 copies
// (and spills) every int32 accumulator each step when the dpbusd intrinsics convert them.
typedef int32_t Ints16 __attribute__((vector_size(64)));
typedef int32_t Ints8 __attribute__((vector_size(32)));
// Every compiler and architecture has 16-byte vectors (SSE2 on x86-64's baseline): the fallback.
typedef float Floats4 __attribute__((vector_size(16)));

// The sum of every lane of every chain: what a kernel returns.
template <class Vector, int count> double sum_lanes(const Vector (&chains)[count]) {
    double sum = 0;
    for (const Vector &chain : chains)
        for (size_t lane = 0; lane < sizeof(Vector) / sizeof(chain[0]); ++lane) sum += double(chain[lane]);
    return sum;
}

double mul_add_vectors(int64_t steps) {
    Floats4 acc[kChainsIn16Registers];
    for (int i = 0; i < kChainsIn16Registers; ++i) acc[i] = Floats4{} + float(i + 2);
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
        for (Floats4 &a : acc) a = a * kScale + kOffset;
    }
    return sum_lanes(acc);
}

#if defined(__x86_64__)

__attribute__((target("avx512f"))) double fma_avx512(int64_t steps) {
    __m512 acc[kChainsIn32Registers];
    for (int i = 0; i < kChainsIn32Registers; ++i) acc[i] = _mm512_set1_ps(float(i + 2));
    const __m512 scale = _mm512_set1_ps(kScale), offset = _mm512_set1_ps(kOffset);
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
        for (__m512 &a : acc) a = _mm512_fmadd_ps(a, scale, offset);
    }
    return sum_lanes(acc);
}

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t steps) {
    __m256 acc[kChainsIn16Registers];
    for (int i = 0; i < kChainsIn16Registers; ++i) acc[i] = _mm256_set1_ps(float(i + 2));
    const __m256 scale = _mm256_set1_ps(kScale), offset = _mm256_set1_ps(kOffset);
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
        for (__m256 &a : acc) a = _mm256_fmadd_ps(a, scale, offset);
    }
    return sum_lanes(acc);
}

__attribute__((target("avx512f,avx512bf16"))) double bf16_dot_avx512(int64_t steps) {
    __m512 acc[kChainsIn32Registers];
    for (int i = 0; i < kChainsIn32Registers; ++i) acc[i] = _mm512_set1_ps(float(i));
    // Products of 1e-6: the sums stay finite and normal.
    const __m512bh factor = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
        for (__m512 &a : acc) a = _mm512_dpbf16_ps(a, factor, factor);
    }
    return sum_lanes(acc);
}

__attribute__((target("avx512f,avx512vnni"))) double int8_dot_avx512_vnni(int64_t steps) {
    Ints16 acc[kChainsIn32Registers];
    for (int i = 0; i < kChainsIn32Registers; ++i) acc[i] = Ints16{} + i;
    const __m512i unsigned_bytes = _mm512_set1_epi8(3), signed_bytes = _mm512_set1_epi8(-2);
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
        for (Ints16 &a : acc) a = Ints16(_mm512_dpbusd_epi32(__m512i(a), unsigned_bytes, signed_bytes));
    }
    return sum_lanes(acc);
}

__attribute__((target("avx2,avxvnni"))) double int8_dot_avx_vnni(int64_t steps) {
    Ints8 acc[kChainsIn16Registers];
    for (int i = 0; i < kChainsIn16Registers; ++i) acc[i] = Ints8{} + i;
    const __m256i unsigned_bytes = _mm256_set1_epi8(3), signed_bytes = _mm256_set1_epi8(-2);
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
        for (Ints8 &a : acc) a = Ints8(_mm256_dpbusd_avx_epi32(__m256i(a), unsigned_bytes, signed_bytes));
    }
    return sum_lanes(acc);
}

// Without VNNI a u8 x s8 dot product step is three instructions: vpmaddubsw (products summed in pairs
// to int16), vpmaddwd by ones (pairs to int32), vpaddd into the accumulator. Only the vpaddd (1 cycle)
// waits on its chain, and more chains would not fit the 16 ymm registers beside the operands.
constexpr int kAddChains = 8;

__attribute__((target("avx2"))) double int8_dot_avx2(int64_t steps) {
    Ints8 acc[kAddChains];
    for (int i = 0; i < kAddChains; ++i) acc[i] = Ints8{} + i;
    __m256i unsigned_bytes = _mm256_set1_epi8(3);
    const __m256i signed_bytes = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
        for (Ints8 &a : acc) {
            // The products do not depend on the accumulator: the empty asm tells the compiler the bytes
            // changed, so that it computes them every time rather than once outside the loop.
            asm volatile("" : "+x"(unsigned_bytes));
            a += Ints8(_mm256_madd_epi16(_mm256_maddubs_epi16(unsigned_bytes, signed_bytes), ones));
        }
    }
    return sum_lanes(acc);
}

// CPUID leaf 7 bits that not every compiler's __builtin_cpu_supports knows.
bool cpuid_leaf7_bit(unsigned subleaf, unsigned register_index, unsigned bit) {
    unsigned registers[4] = {};
    if (!__get_cpuid_count(7, subleaf, &registers[0], &registers[1], &registers[2], &registers[3])) return false;
    return (registers[register_index] >> bit) & 1;
}
constexpr unsigned kEax = 0, kEdx = 3;
bool has_avx_vnni() { return __builtin_cpu_supports("avx2") && cpuid_leaf7_bit(1, kEax, 4); }
bool has_amx_bf16() { return cpuid_leaf7_bit(0, kEdx, 22); }

#endif // __x86_64__

// Per step: one instruction (or sequence) per chain, of `lanes` lanes, `ops` operations per lane each.
constexpr double ops_per_step(int chains, int lanes, int ops) { return double(chains) * lanes * ops; }

Kernel f32_fma_kernel() {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f"))
        return {fma_avx512, ops_per_step(kChainsIn32Registers, 16, 2), "AVX-512F zmm vfmadd"};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return {fma_avx2, ops_per_step(kChainsIn16Registers, 8, 2), "AVX2+FMA ymm vfmadd"};
    return {mul_add_vectors, ops_per_step(kChainsIn16Registers, 4, 2), "SSE2 xmm mulps+addps"};
#else
    return {mul_add_vectors, ops_per_step(kChainsIn16Registers, 4, 2), "128-bit vector multiply+add"};
#endif
}

// Per f32 lane, vdpbf16ps multiplies two bf16 pairs and adds both products: 4 FLOP.
std::optional<Kernel> bf16_dot_kernel() {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
        return Kernel{bf16_dot_avx512, ops_per_step(kChainsIn32Registers, 16, 4), "AVX-512 BF16 zmm vdpbf16ps"};
#endif
    return std::nullopt;
}

// Per int32 lane, vpdpbusd multiplies four u8 x s8 pairs and adds the products: 8 operations; the AVX2
// sequence does the same work (the multiplications by one in vpmaddwd not counted).
std::optional<Kernel> int8_dot_kernel() {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni"))
        return Kernel{int8_dot_avx512_vnni, ops_per_step(kChainsIn32Registers, 16, 8), "AVX-512 VNNI zmm vpdpbusd"};
    if (has_avx_vnni())
        return Kernel{int8_dot_avx_vnni, ops_per_step(kChainsIn16Registers, 8, 8), "AVX-VNNI ymm vpdpbusd"};
    if (__builtin_cpu_supports("avx2"))
        return Kernel{int8_dot_avx2, ops_per_step(kAddChains, 8, 8), "AVX2 ymm vpmaddubsw+vpmaddwd+vpaddd"};
#endif
    return std::nullopt;
}

// Runs `steps` of the kernel on each of `threads` threads, released together; returns the slowest
// thread's seconds and adds the kernels' results to `sink`.
double slowest_thread_seconds(const Kernel &kernel, int64_t steps, int threads, volatile double &sink) {
    std::atomic<bool> go{false};
    std::vector<double> seconds(static_cast<size_t>(threads)), results(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            const auto start = std::chrono::steady_clock::now();
            results[size_t(t)] = kernel.loop(steps);
            seconds[size_t(t)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        });
    go.store(true, std::memory_order_release);
    for (std::thread &w : workers) w.join();
    for (double r : results) sink = sink + r;
    return *std::max_element(seconds.begin(), seconds.end());
}

// Best rate of kRepeats runs, in 1e9 operations per second: total work over the slowest thread's time.
double best_rate(const Kernel &kernel, int64_t steps, int threads, volatile double &sink) {
    double best = 0;
    for (int r = 0; r < kRepeats; ++r) {
        const double seconds = slowest_thread_seconds(kernel, steps, threads, sink);
        best = std::max(best, kernel.ops_per_step * double(steps) * threads / seconds / 1e9);
    }
    return best;
}

PeakRate measure_kernel(const Kernel &kernel, int threads) {
    volatile double sink = 0;
    // Steps for about kRepeatSeconds on one thread: grown until a run is long enough to time, then scaled.
    int64_t steps = 1024;
    double seconds = 0;
    while ((seconds = slowest_thread_seconds(kernel, steps, 1, sink)) < kRepeatSeconds / 8) steps *= 4;
    steps = std::max<int64_t>(1, int64_t(double(steps) * kRepeatSeconds / seconds));
    return PeakRate{best_rate(kernel, steps, 1, sink), best_rate(kernel, steps, threads, sink), kernel.isa};
}

std::array<double, 3> read_load_average() {
    std::array<double, 3> load{};
    std::ifstream file("/proc/loadavg");
    if (!(file >> load[0] >> load[1] >> load[2])) load.fill(std::numeric_limits<double>::quiet_NaN());
    return load;
}

nlohmann::json rate_json(const std::optional<PeakRate> &rate) {
    if (!rate) return nullptr;
    return {{"one_thread", rate->one_thread}, {"all_threads", rate->all_threads}, {"isa", rate->isa}};
}

void print_rate(const char *name, const std::optional<PeakRate> &rate, const char *absent) {
    if (rate)
        std::printf("%-20s %10.1f %10.1f   %s\n", name, rate->one_thread, rate->all_threads, rate->isa.c_str());
    else
        std::printf("%-20s %10s %10s   %s\n", name, "n/a", "n/a", absent);
}

} // namespace

MachinePeak measure_machine_peak(int threads) {
    if (threads < 1) fail("machine peak: ", threads, " threads; at least 1");
    MachinePeak peak;
    peak.threads = threads;
    peak.load_average_start = read_load_average();
    peak.f32_fma_gflop = measure_kernel(f32_fma_kernel(), threads);
    if (const std::optional<Kernel> bf16 = bf16_dot_kernel()) peak.bf16_dot_gflop = measure_kernel(*bf16, threads);
    if (const std::optional<Kernel> int8 = int8_dot_kernel()) peak.int8_dot_gop = measure_kernel(*int8, threads);
    const BandwidthResult one = measure_read_bandwidth(kBandwidthBytes, 1);
    const BandwidthResult all = measure_read_bandwidth(kBandwidthBytes, threads);
    peak.read_bandwidth_gb = {one.gb_per_s, all.gb_per_s,
                              concat("vectorised uint32 sums over ", kBandwidthBytes >> 20, " MiB")};
#if defined(__x86_64__)
    peak.amx_bf16 = has_amx_bf16();
#endif
    peak.load_average_end = read_load_average();
    return peak;
}

nlohmann::json report_machine_peak(const MachinePeak &peak) {
    std::printf("machine peak, best of %d runs of about %.0f ms; load average (1, 5, 15 min) %.2f %.2f %.2f at the "
                "start, %.2f %.2f %.2f at the end (valid only on an idle machine)\n",
                kRepeats, kRepeatSeconds * 1e3, peak.load_average_start[0], peak.load_average_start[1],
                peak.load_average_start[2], peak.load_average_end[0], peak.load_average_end[1],
                peak.load_average_end[2]);
    std::printf("%-20s %10s %10s   %s\n", "rate", "1 thread", concat(peak.threads, " threads").c_str(),
                "measured with");
    print_rate("f32 FMA GFLOP/s", peak.f32_fma_gflop, "");
    print_rate("bf16 dot GFLOP/s", peak.bf16_dot_gflop, "no AVX-512 BF16");
    print_rate("int8 dot GOP/s", peak.int8_dot_gop, "no AVX2");
    print_rate("read GB/s", peak.read_bandwidth_gb, "");
    const char *amx = peak.amx_bf16 ? "in CPUID, not measured" : "not in CPUID";
    std::printf("%-20s %10s %10s   %s\n", "AMX-BF16 GFLOP/s", "n/a", "n/a", amx);
    return {{"threads", peak.threads},
            {"f32_fma_gflop_per_s", rate_json(peak.f32_fma_gflop)},
            {"bf16_dot_gflop_per_s", rate_json(peak.bf16_dot_gflop)},
            {"int8_dot_gop_per_s", rate_json(peak.int8_dot_gop)},
            {"read_gb_per_s", rate_json(peak.read_bandwidth_gb)},
            {"amx_bf16", amx},
            {"load_average_start", peak.load_average_start},
            {"load_average_end", peak.load_average_end}};
}

} // namespace chatterbox::bench
