#include "models/chatterbox/s3gen/flow_batch.h"

#include "core/error.h"

namespace chatterbox::s3gen {

struct FlowBatchRequest : BatchRequestEnd {
    FlowBatchRequest(const FlowEncoding &e, const std::vector<float> &prompt, const CancelFlag *c,
                     const CfmStepObserver &o, std::vector<float> noise, std::vector<float> time_grid)
        : encoding(e), prompt_condition(prompt), cancel(c), observer(o), x(std::move(noise)),
          grid(std::move(time_grid)) {}
    uint64_t id = 0; // unique: a later request may live at the same address
    const FlowEncoding &encoding;
    const std::vector<float> &prompt_condition;
    const CancelFlag *cancel;
    const CfmStepObserver &observer;
    std::vector<float> x;    // the sample, (80, frames)
    std::vector<float> grid; // its solver's time grid: one step per interval
    int step = 0;            // Euler steps taken

    bool solved() const { return size_t(step) + 1 >= grid.size(); }

    bool cancelled() const { return cancel && cancel->requested(); }
};

FlowBatch::FlowBatch(const FlowModel &model, const BackendOptions &backend, const FlowBatchOptions &options)
    : model_(model), options_(options), backend_(backend) {
    if (options.max_requests < 1) fail("flow batch: max_requests is ", options.max_requests, ", expected >= 1");
    start();
}

FlowBatch::~FlowBatch() { stop(); }

std::vector<float> FlowBatch::solve(const FlowEncoding &encoding, const std::vector<float> &prompt_condition,
                                    std::vector<float> noise, const CancelFlag *cancel, const CfmStepObserver &observer,
                                    int cfm_steps) {
    const size_t n = size_t(model_.hparams().mel_bins * encoding.frames);
    if (noise.size() != n || prompt_condition.size() != n || encoding.mu.size() != n)
        fail("flow batch: a request of ", encoding.frames, " frames needs noise, mu and prompt condition of ", n,
             " values each, got ", noise.size(), ", ", encoding.mu.size(), " and ", prompt_condition.size());
    FlowBatchRequest request(encoding, prompt_condition, cancel, observer, std::move(noise),
                             cfm_time_grid(model_.hparams(), cfm_steps));
    {
        std::lock_guard<std::mutex> lock(mutex_);
        request.id = next_id_++;
    }
    submit_and_wait(&request);
    return std::move(request.x);
}

void FlowBatch::round() {
    admit_waiting();
    if (!active_.empty()) step_batch();
}

void FlowBatch::admit_waiting() {
    // Each request's flag is read once: a request is either finished as cancelled or kept.
    std::vector<FlowBatchRequest *> gone, kept;
    for (FlowBatchRequest *r : active_) (r->cancelled() ? gone : kept).push_back(r);
    active_ = std::move(kept);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::deque<FlowBatchRequest *> still_waiting;
        for (FlowBatchRequest *r : waiting_) {
            if (r->cancelled()) {
                gone.push_back(r);
            } else {
                still_waiting.push_back(r);
            }
        }
        waiting_ = std::move(still_waiting);
        while (!waiting_.empty() && int(active_.size()) < options_.max_requests) {
            active_.push_back(waiting_.front());
            waiting_.pop_front();
        }
    }
    publish_active();
    for (FlowBatchRequest *r : gone) r->finish(std::make_exception_ptr(Cancelled("synthesis cancelled")));
}

void FlowBatch::step_batch() {
    const FlowHParams &hp = model_.hparams();
    std::vector<std::vector<float>> velocities;
    try {
        std::vector<uint64_t> members;
        for (const FlowBatchRequest *r : active_) members.push_back(r->id);
        if (!graph_ || graph_members_ != members) {
            graph_.reset(); // free the old graph's buffers before allocating the new one
            std::vector<int64_t> frames;
            for (const FlowBatchRequest *r : active_) frames.push_back(r->encoding.frames);
            graph_ = std::make_unique<EstimatorGraph>(model_.estimator(), hp, backend_, frames, options_.attention);
            for (size_t i = 0; i < active_.size(); ++i)
                graph_->set_conditioning(i, active_[i]->encoding.mu, active_[i]->encoding.speaker,
                                         active_[i]->prompt_condition);
            graph_members_ = std::move(members);
        }
        std::vector<EstimatorGraph::RequestStep> steps;
        for (const FlowBatchRequest *r : active_)
            steps.push_back({&r->x, r->grid[size_t(r->step)], r->grid[size_t(r->step) + 1]});
        velocities = graph_->velocities(steps);
    } catch (...) {
        graph_.reset();
        graph_members_.clear();
        const std::vector<FlowBatchRequest *> failed = std::move(active_);
        active_.clear();
        publish_active();
        for (FlowBatchRequest *r : failed) r->finish(std::current_exception());
        return;
    }
    count_step();
    std::vector<FlowBatchRequest *> still;
    std::vector<std::pair<FlowBatchRequest *, std::exception_ptr>> ended;
    for (size_t i = 0; i < active_.size(); ++i) {
        FlowBatchRequest *r = active_[i];
        euler_update(r->x, velocities[i], r->grid[size_t(r->step) + 1] - r->grid[size_t(r->step)], hp);
        std::exception_ptr error;
        try {
            if (r->observer) r->observer(r->step, r->x);
        } catch (...) {
            error = std::current_exception();
        }
        ++r->step;
        if (!r->solved() && !error) {
            still.push_back(r);
        } else {
            ended.emplace_back(r, error);
        }
    }
    active_ = std::move(still);
    publish_active(); // before the callers wake: a request that ended is out of the count
    for (auto &[r, error] : ended) r->finish(error);
}

} // namespace chatterbox::s3gen
