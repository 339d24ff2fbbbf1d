#pragma once
// Where a session's T3 requests are generated, chosen once when the session is made: alone on the
// session's own t3::T3Session (generate.h), or with the decode steps in a shared T3Batch
// (batch.h). Either gives a request the same tokens.
//
//   Executor alone(session);                      // generate() on the session's backend
//   Executor batched(session, &batch, &cancel);   // batch.generate(session, ...)
//   GenerationResult r = alone.generate(cond, text_tokens, params, hooks, prefix);

#include "core/cancel.h"
#include "models/chatterbox/t3/batch.h"
#include "models/chatterbox/t3/generate.h"

namespace chatterbox::t3 {

class Executor {
  public:
    // batch nullptr: alone. cancel: polled by the batch between a request's prefill parts (the
    // session's backend stops its own graphs by itself).
    explicit Executor(T3Session &session, T3Batch *batch = nullptr, const CancelFlag *cancel = nullptr)
        : session_(session), batch_(batch), cancel_(cancel) {}

    GenerationResult generate(const CondEmbeddings &cond, const std::vector<int32_t> &text_tokens,
                              const SamplingParams &params, const GenerationHooks &hooks = {},
                              const KvPrefix *prefix = nullptr) const {
        return batch_ ? batch_->generate(session_, cond, text_tokens, params, hooks, prefix, cancel_)
                      : t3::generate(session_, cond, text_tokens, params, hooks, prefix);
    }
    T3Session &session() const { return session_; }

  private:
    T3Session &session_;
    T3Batch *batch_;
    const CancelFlag *cancel_;
};

} // namespace chatterbox::t3
