#pragma once
// Continuous batching of the flow's CFM solver across requests. Each request encodes on its own
// FlowSession (on the caller's thread), then its Euler steps join a batch that one scheduler
// thread steps: every step runs the estimator once for all joined requests — each padded to the
// longest, attending over its own frames only, at its own step of the time grid — and each request
// takes its own Euler update, so a request's mel is the one it gets alone (within the f32 rounding
// of differently shaped matrix products). Requests join and leave at step boundaries; a cancelled
// one leaves at the next boundary and its caller gets Cancelled.
//
//   FlowBatch batch(model, backend_options, {.max_requests = 4});
//   FlowSession session(model, backend, attention, &batch, &cancel);   // its solve() steps in the batch
//
// The estimator graph is rebuilt whenever the batch's members change (a join or a leave).

#include "core/backend.h"
#include "core/batch_loop.h"
#include "core/cancel.h"
#include "models/chatterbox/s3gen/flow.h"
#include "models/chatterbox/s3gen/flow_cfm.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace chatterbox::s3gen {

struct FlowBatchOptions {
    int max_requests = 4; // requests solved together (a CFG request takes two estimator rows)
    nn::AttentionPath attention = default_estimator_attention();
};

struct FlowBatchRequest;

class FlowBatch : private BatchLoop<FlowBatchRequest> {
  public:
    // The scheduler's own backend (device, threads) computes the batch.
    FlowBatch(const FlowModel &model, const BackendOptions &backend, const FlowBatchOptions &options);
    ~FlowBatch() override; // finishes the requests in flight

    // The full CFM result (80, frames) of one request, as solve_euler gives it alone: its encoding,
    // its prompt condition (80, frames) and initial noise (80, frames). Thread-safe. cancel
    // (optional) is polled at every step boundary: a cancelled request leaves and this throws
    // Cancelled. observer (optional) sees each of the request's steps, on the batch's thread,
    // before the batch admits newcomers for its next step. cfm_steps: the request's Euler steps
    // (cfm_steps(hp, cfm_steps)); requests of different counts share the batch.
    std::vector<float> solve(const FlowEncoding &encoding, const std::vector<float> &prompt_condition,
                             std::vector<float> noise, const CancelFlag *cancel = nullptr,
                             const CfmStepObserver &observer = {}, int cfm_steps = 0);

    using BatchLoop::counts; // steps: estimator runs; request_steps: the requests they stepped
    const FlowBatchOptions &options() const { return options_; }

  private:
    void round() override;
    void admit_waiting();
    void step_batch();

    const FlowModel &model_;
    FlowBatchOptions options_;
    Backend backend_;
    std::unique_ptr<EstimatorGraph> graph_;
    std::vector<uint64_t> graph_members_; // the ids of the requests graph_ was built for, in its order
    uint64_t next_id_ = 0;                // under mutex_
};

} // namespace chatterbox::s3gen
