#pragma once
// Memory read bandwidth of this machine: the yardstick for bandwidth-bound stages (T3 decode
// streams every weight matrix once per generated token).

#include <cstddef>

namespace chatterbox::bench {

struct BandwidthResult {
    double gb_per_s = 0; // 1e9 bytes per second, best of the repeats
    size_t bytes = 0;    // size of the buffer read per repeat
    int threads = 0;
};

// Reads a buffer of `bytes` with `threads` threads (vectorised integer sums), best of `repeats`.
BandwidthResult measure_read_bandwidth(size_t bytes, int threads, int repeats = 5);

} // namespace chatterbox::bench
