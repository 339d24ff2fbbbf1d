#pragma once
// How many of a backend's CPU threads can run at once right now. ggml's threads meet at a barrier
// after every graph node; when other processes keep a core busy, one of two threads is often
// descheduled and the other waits a whole scheduler slice at each barrier, so two threads run many
// times slower than one. Before each graph the backend asks for a thread count: the configured one,
// less one for each CPU that runnable threads of other processes occupy.
//
//   CpuContention contention(/*max_threads=*/2);
//   set_n_threads(cpu, contention.threads_now());

#include <chrono>

namespace chatterbox {

class CpuContention {
  public:
    explicit CpuContention(int max_threads);

    // max_threads, less the CPUs other processes' runnable threads occupy (at least 1). Samples
    // the system at most every kSamplePeriod and smooths over a few samples, so a short burst of
    // other work does not flip the count; where the system cannot be read it is max_threads.
    int threads_now();

    // Runnable threads of other processes now: every runnable thread (/proc/loadavg) less this
    // process's own (/proc/self/task/*/stat). -1 where that cannot be read (not Linux).
    static int others_runnable();
    // This process's runnable threads now (the caller's included); -1 where it cannot be read.
    static int own_runnable();
    // CPUs this process may run on.
    static int usable_cpus();

  private:
    static constexpr std::chrono::milliseconds kSamplePeriod{20};
    int max_threads_;
    int cpus_;
    double others_ = 0; // smoothed others_runnable()
    int threads_;
    std::chrono::steady_clock::time_point next_sample_{};
};

} // namespace chatterbox
