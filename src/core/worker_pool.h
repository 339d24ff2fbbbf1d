#pragma once
// A fixed set of threads that run a loop's iterations together with the calling thread. The T3
// batch samples its requests' next tokens with it: each request's sampler is its own, and on a GPU
// sampling them one after another took longer than the batched decode step itself.
//
//   WorkerPool pool(3);                               // three threads beside the caller
//   pool.run(n, [&](size_t i) { sample(i); });        // every i once; returns when all are done
//
// The body must not throw (catch inside it); run() is called from one thread at a time.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace chatterbox {

class WorkerPool {
  public:
    explicit WorkerPool(int threads); // threads beside the caller; 0 runs every loop on the caller
    ~WorkerPool();
    WorkerPool(const WorkerPool &) = delete;
    WorkerPool &operator=(const WorkerPool &) = delete;

    void run(size_t n, const std::function<void(size_t)> &body);
    int threads() const { return int(threads_.size()); }

  private:
    void work();
    void drain(size_t n, const std::function<void(size_t)> &body);

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(size_t)> *body_ = nullptr; // the current loop, under mutex_
    size_t n_ = 0;
    uint64_t loop_ = 0; // counts run() calls that woke the threads
    int busy_ = 0;      // threads still in the current loop
    bool stopping_ = false;
    std::atomic<size_t> next_{0};
    std::vector<std::thread> threads_;
};

} // namespace chatterbox
