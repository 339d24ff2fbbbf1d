// CpuContention: other processes' runnable threads are seen, this process's own are told apart.
#include "core/cpu_contention.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace chatterbox;

namespace {

// A child process that keeps one CPU busy (always runnable) until it is killed.
class BusyChild {
  public:
    BusyChild() {
        pid_ = fork();
        if (pid_ == 0) {
            volatile unsigned long spin = 0;
            for (;;) ++spin;
        }
    }
    ~BusyChild() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    bool started() const { return pid_ > 0; }

  private:
    pid_t pid_ = -1;
};

// Threads of this process that keep `n` CPUs busy (always runnable) until it goes.
class SpinningThreads {
  public:
    explicit SpinningThreads(int n) {
        for (int i = 0; i < n; ++i)
            threads_.emplace_back([this] {
                while (!stop_.load(std::memory_order_relaxed)) {
                }
            });
    }
    ~SpinningThreads() {
        stop_ = true;
        for (std::thread &t : threads_) t.join();
    }

  private:
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
};

int threads_after_settling(CpuContention &contention) {
    int threads = 0;
    for (int i = 0; i < 8; ++i) { // several samples, 20 ms apart at least
        threads = contention.threads_now();
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return threads;
}

} // namespace

TEST(CpuContention, CountsRunnableThreadsOfOtherProcesses) {
    ASSERT_GE(CpuContention::others_runnable(), 0) << "/proc cannot be read";
    BusyChild child;
    ASSERT_TRUE(child.started());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int seen = 0;
    for (int i = 0; i < 5; ++i) seen = std::max(seen, CpuContention::others_runnable());
    EXPECT_GE(seen, 1); // the spinning child is runnable whether or not it is on a CPU right now
}

TEST(CpuContention, CountsThisProcesssOwnRunnableThreads) {
    // others_runnable() leaves them out; threads_now() adds those besides the caller.
    const int cpus = CpuContention::usable_cpus();
    int own = 0;
    {
        const SpinningThreads spinning(cpus);
        own = CpuContention::own_runnable();
    }
    EXPECT_GE(own, cpus + 1) << "the " << cpus << " spinning threads and the caller are runnable";
}

TEST(CpuContention, FewerThreadsWhileAnotherProcessKeepsEveryCpuButOneBusy) {
    const int cpus = CpuContention::usable_cpus();
    if (cpus < 2) GTEST_SKIP() << "needs two CPUs";
    std::vector<BusyChild> children(size_t(cpus - 1));
    CpuContention contention(cpus);
    EXPECT_EQ(threads_after_settling(contention), 1);
}

// Another thread of the same process (a newcomer's prefill beside a batch, another session)
// keeping a CPU busy is contention too: two threads meeting at barriers would wait for each other.
TEST(CpuContention, FewerThreadsWhileAnotherThreadOfThisProcessKeepsACpuBusy) {
    const int cpus = CpuContention::usable_cpus();
    if (cpus < 2) GTEST_SKIP() << "needs two CPUs";
    const SpinningThreads spinning(cpus - 1);
    CpuContention contention(cpus);
    EXPECT_EQ(threads_after_settling(contention), 1);
}

TEST(CpuContention, OneThreadStaysOne) {
    CpuContention contention(1);
    EXPECT_EQ(contention.threads_now(), 1);
}
