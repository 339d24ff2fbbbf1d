#pragma once
// Wall-clock helpers shared by the benchmarks.

#include <chrono>
#include <vector>

namespace chatterbox::bench {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point start, Clock::time_point end) {
    return std::chrono::duration<double, std::milli>(end - start).count();
}

inline double ms_since(Clock::time_point start) { return ms_between(start, Clock::now()); }

// CPU time of this process (all threads) in milliseconds. On a shared machine the wall time of a
// stage includes waiting for a core; its CPU time is the work (plus the threads' spin-waits).
double process_cpu_ms();

// The process's peak resident set since the last reset_peak_rss(), from /proc (Linux).
void reset_peak_rss();
double peak_rss_mib();

// Smallest, median (upper median for an even count) and mean of a non-empty sample.
struct Spread {
    double min = 0, median = 0, mean = 0;
};
Spread spread_of(std::vector<double> samples);

} // namespace chatterbox::bench
