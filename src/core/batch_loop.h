#pragma once
// The thread and queues of a continuous batch (T3 decode, the flow's CFM steps): callers enqueue
// requests from any thread and wait for theirs; one thread runs rounds — admit waiting requests,
// step the batch — while there is work.
//
//   class MyBatch : BatchLoop<MyRequest> {
//       MyBatch() { start(); }
//       ~MyBatch() { stop(); }                  // before the members round() uses go
//       void round() override { ... }           // on the loop's thread
//   };

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace chatterbox {

// A request's end as its caller waits for it; the batch's thread calls finish() once.
struct BatchRequestEnd {
    std::mutex mutex;
    std::condition_variable changed;
    bool done = false;
    std::exception_ptr error;

    void finish(std::exception_ptr e = nullptr) {
        std::lock_guard<std::mutex> lock(mutex);
        done = true;
        error = std::move(e);
        changed.notify_one();
    }
};

// What a batch has done since start, and holds now.
struct BatchCounts {
    int active = 0;                        // requests in the batch now
    int waiting = 0;                       // requests waiting for room
    uint64_t steps = 0, request_steps = 0; // steps run, and the requests those steps ran
};

template <class Request> class BatchLoop {
  public:
    BatchLoop(const BatchLoop &) = delete;
    BatchLoop &operator=(const BatchLoop &) = delete;

    BatchCounts counts() const {
        BatchCounts c;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            c.waiting = int(waiting_.size());
        }
        c.active = active_count_.load();
        c.steps = steps_.load();
        c.request_steps = request_steps_.load();
        return c;
    }

  protected:
    BatchLoop() = default;
    virtual ~BatchLoop() = default;

    void start() {
        thread_ = std::thread([this] { loop(); });
    }
    // Lets the requests in flight finish, then joins the thread.
    void stop() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_one();
        if (thread_.joinable()) thread_.join();
    }
    void enqueue(Request *request) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            waiting_.push_back(request);
        }
        wake_.notify_one();
    }
    // Enqueues a request (a BatchRequestEnd) and waits for its end; rethrows its error.
    void submit_and_wait(Request *request) {
        enqueue(request);
        std::unique_lock<std::mutex> lock(request->mutex);
        request->changed.wait(lock, [&] { return request->done; });
        if (request->error) std::rethrow_exception(request->error);
    }
    // One round on the loop's thread, called while a request waits or is active.
    virtual void round() = 0;
    // After a step of the active requests, before any of them leaves.
    void count_step() {
        ++steps_;
        request_steps_ += active_.size();
    }
    void publish_active() { active_count_ = int(active_.size()); }

    mutable std::mutex mutex_;      // guards waiting_
    std::deque<Request *> waiting_; // in arrival order
    std::vector<Request *> active_; // in the batch (the loop's thread only)

  private:
    void loop() {
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !active_.empty(); });
                if (stopping_ && waiting_.empty() && active_.empty()) return;
            }
            round();
        }
    }

    std::condition_variable wake_;
    std::atomic<int> active_count_{0};
    std::atomic<uint64_t> steps_{0}, request_steps_{0};
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace chatterbox
