#include "server/session_pool.h"

#include "core/error.h"

namespace chatterbox::server {

SessionPool::SessionPool(Runtime &runtime, int sessions, int queue_limit, const PipelineSessionOptions &options)
    : queue_limit_(queue_limit) {
    if (sessions < 1) throw InvalidArgument(concat("sessions is ", sessions, ", expected 1 or more"));
    if (queue_limit < 0) throw InvalidArgument(concat("queue is ", queue_limit, ", expected 0 or more"));
    for (int i = 0; i < sessions; ++i) {
        sessions_.push_back(std::make_unique<PipelineSession>(runtime, options));
        free_.push_back(sessions_.back().get());
    }
}

// A lease outliving the pool would return its session to freed memory: the server stops serving
// (and so drops every lease) before the pool goes.
SessionPool::~SessionPool() = default;

std::shared_ptr<PipelineSession> SessionPool::acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (free_.empty()) {
        if (waiting_ >= queue_limit_) return nullptr;
        ++waiting_;
        freed_.wait(lock, [&] { return !free_.empty(); });
        --waiting_;
    }
    PipelineSession *session = free_.back();
    free_.pop_back();
    return std::shared_ptr<PipelineSession>(session, [this](PipelineSession *s) { release(s); });
}

void SessionPool::release(PipelineSession *session) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        free_.push_back(session);
    }
    freed_.notify_one();
}

int SessionPool::busy() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return int(sessions_.size() - free_.size());
}

int SessionPool::waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_;
}

} // namespace chatterbox::server
