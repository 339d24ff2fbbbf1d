// core/worker_pool.h: every iteration runs once per loop, the threads take part, loops follow each
// other without a lost or repeated iteration, and a pool of no threads runs on the caller.
#include "core/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace chatterbox {
namespace {

TEST(WorkerPool, EveryIterationRunsOnceInEveryLoop) {
    WorkerPool pool(3);
    for (size_t n : {0u, 1u, 2u, 7u, 64u, 1000u}) {
        for (int loop = 0; loop < 20; ++loop) {
            std::vector<std::atomic<int>> runs(n);
            pool.run(n, [&](size_t i) { ++runs[i]; });
            for (size_t i = 0; i < n; ++i)
                ASSERT_EQ(runs[i].load(), 1) << "n " << n << ", loop " << loop << ", i " << i;
        }
    }
}

TEST(WorkerPool, ItsThreadsTakePartBesideTheCaller) {
    WorkerPool pool(3);
    EXPECT_EQ(pool.threads(), 3);
    std::mutex mutex;
    std::set<std::thread::id> seen;
    // Each iteration waits a little, so one thread cannot take them all before the others wake.
    pool.run(64, [&](size_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::lock_guard<std::mutex> lock(mutex);
        seen.insert(std::this_thread::get_id());
    });
    EXPECT_GE(seen.size(), 2u);
    EXPECT_LE(seen.size(), 4u);
}

TEST(WorkerPool, WithoutThreadsTheCallerRunsTheLoopInOrder) {
    WorkerPool pool(0);
    std::vector<size_t> order;
    const std::thread::id caller = std::this_thread::get_id();
    pool.run(5, [&](size_t i) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        order.push_back(i);
    });
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

} // namespace
} // namespace chatterbox
