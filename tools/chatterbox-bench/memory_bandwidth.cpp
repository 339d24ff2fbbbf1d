#include "memory_bandwidth.h"

#include "core/error.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace chatterbox::bench {

namespace {

// Integer addition is associative, so the compiler vectorises this loop (a float sum would need
// -ffast-math); the result is kept so the reads cannot be optimised away.
uint32_t sum_words(const uint32_t *data, size_t n) {
    uint32_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += data[i];
    return sum;
}

} // namespace

BandwidthResult measure_read_bandwidth(size_t bytes, int threads, int repeats) {
    if (threads < 1 || repeats < 1 || bytes < sizeof(uint32_t) * size_t(threads))
        fail("memory bandwidth probe: bad request (", bytes, " bytes, ", threads, " threads, ", repeats, " repeats)");
    std::vector<uint32_t> buffer(bytes / sizeof(uint32_t));
    for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = uint32_t(i); // touch every page before timing
    const size_t per_thread = buffer.size() / size_t(threads);
    std::vector<uint32_t> sums(static_cast<size_t>(threads));
    double best = 0;
    for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t)
            workers.emplace_back(
                [&, t] { sums[size_t(t)] = sum_words(buffer.data() + size_t(t) * per_thread, per_thread); });
        for (std::thread &w : workers) w.join();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, double(per_thread * size_t(threads) * sizeof(uint32_t)) / seconds / 1e9);
    }
    volatile uint32_t keep = 0;
    for (uint32_t s : sums) keep = keep + s;
    (void)keep;
    return BandwidthResult{best, per_thread * size_t(threads) * sizeof(uint32_t), threads};
}

} // namespace chatterbox::bench
