#pragma once
// N PipelineSessions over one Runtime and a bounded queue in front of them: a request takes a free session,
// or waits for one while fewer than `queue_limit` requests are already waiting, or is turned away
// (the server answers 503 with Retry-After).

#include "models/chatterbox/pipeline_session.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace chatterbox::server {

class SessionPool {
  public:
    // Throws InvalidArgument for sessions < 1 or queue_limit < 0.
    SessionPool(Runtime &runtime, int sessions, int queue_limit, const PipelineSessionOptions &options);
    ~SessionPool();
    SessionPool(const SessionPool &) = delete;
    SessionPool &operator=(const SessionPool &) = delete;

    // A free session, held until the last copy of the pointer is dropped; waits in the queue when all
    // are busy; nullptr when the queue is full as well.
    std::shared_ptr<PipelineSession> acquire();

    int size() const { return int(sessions_.size()); }
    int busy() const;
    int waiting() const;

  private:
    void release(PipelineSession *session);

    std::vector<std::unique_ptr<PipelineSession>> sessions_;
    const int queue_limit_;
    mutable std::mutex mutex_;
    std::condition_variable freed_;
    std::vector<PipelineSession *> free_;
    int waiting_ = 0;
};

} // namespace chatterbox::server
