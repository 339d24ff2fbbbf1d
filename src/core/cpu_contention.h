#pragma once
// How many of a backend's CPU threads can run at once right now. ggml's threads meet at a barrier
// after every graph node; when other processes keep a core busy, one of two threads is often
// descheduled and the other waits a whole scheduler slice at each barrier, so two threads run many
// times slower than one. Before each graph the backend asks for a thread count: the configured one,
// less one for each CPU that other processes' runnable threads occupy, and one for each other thread
// of this process that kept a CPU busy of late (another session, the flow or vocoder batch beside the
// T3 batch). The latter are judged by the CPU time they used, not by their state at the moment: a
// batch wakes its requests' threads just before its next step, and they are runnable then for a
// few microseconds of work.
//
//   CpuContention contention(/*max_threads=*/2);
//   set_n_threads(cpu, contention.threads_now());

#include <chrono>
#include <map>
#include <string>

namespace chatterbox {

class CpuContention {
  public:
    explicit CpuContention(int max_threads);

    // max_threads, less the CPUs that other work occupies (at least 1). Samples
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
    // Threads of this process other than the caller that used at least half a CPU over the last
    // kOwnPeriod (their user + system time in /proc/self/task/*/stat, in clock ticks); 0 until
    // there is a baseline, and where it cannot be read.
    int busy_own_threads();

    static constexpr std::chrono::milliseconds kSamplePeriod{20};
    static constexpr std::chrono::milliseconds kOwnPeriod{100}; // several clock ticks (10 ms each)
    int max_threads_;
    int cpus_;
    double others_ = 0; // smoothed others_runnable()
    int threads_;
    std::chrono::steady_clock::time_point next_sample_{};
    long ticks_per_s_ = 100;
    std::map<std::string, long long> own_ticks_; // CPU ticks by thread id at the last own sample
    std::chrono::steady_clock::time_point last_own_sample_{}, next_own_sample_{};
    int busy_own_ = 0;
};

} // namespace chatterbox
