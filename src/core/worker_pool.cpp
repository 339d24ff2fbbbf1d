#include "core/worker_pool.h"

namespace chatterbox {

WorkerPool::WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : threads_) t.join();
}

void WorkerPool::drain(size_t n, const std::function<void(size_t)> &body) {
    for (size_t i = next_++; i < n; i = next_++) body(i);
}

void WorkerPool::run(size_t n, const std::function<void(size_t)> &body) {
    if (threads_.empty() || n < 2) {
        for (size_t i = 0; i < n; ++i) body(i);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        body_ = &body;
        n_ = n;
        next_ = 0;
        busy_ = int(threads_.size());
        ++loop_;
    }
    wake_.notify_all();
    drain(n, body);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
    body_ = nullptr;
}

void WorkerPool::work() {
    uint64_t seen = 0;
    for (;;) {
        const std::function<void(size_t)> *body;
        size_t n;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || loop_ != seen; });
            if (stopping_) return;
            seen = loop_;
            body = body_;
            n = n_;
        }
        drain(n, *body);
        std::lock_guard<std::mutex> lock(mutex_);
        if (--busy_ == 0) done_.notify_one();
    }
}

} // namespace chatterbox
