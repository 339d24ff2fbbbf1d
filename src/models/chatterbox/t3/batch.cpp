#include "models/chatterbox/t3/batch.h"

#include "core/error.h"
#include "models/chatterbox/t3/batch_decoder.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

namespace chatterbox::t3 {

namespace {

// A StepRecord that outlives its step, for the caller's thread; the logits only when the hook reads them.
struct StepCopy {
    int step = 0;
    bool logits = false;
    std::vector<float> raw, cfg, penalized, processed;
    int32_t token = 0;

    StepCopy(const StepRecord &r, bool with_logits) : step(r.step), logits(with_logits), token(r.token) {
        if (!with_logits) return;
        raw = *r.raw;
        cfg = *r.cfg;
        penalized = *r.penalized;
        processed = *r.processed;
    }
    StepRecord record() const {
        if (!logits) return StepRecord{step, nullptr, nullptr, nullptr, nullptr, token};
        return StepRecord{step, &raw, &cfg, &penalized, &processed, token};
    }
};

// Adds the time since `start` to `total` and returns now.
std::chrono::steady_clock::time_point add_elapsed(std::atomic<int64_t> &total,
                                                  std::chrono::steady_clock::time_point start) {
    const auto now = std::chrono::steady_clock::now();
    total += std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count();
    return now;
}

} // namespace

struct BatchRequest : BatchRequestEnd {
    BatchRequest(T3Session &s, bool logits, const CancelFlag *flag) : session(s), relay_logits(logits), cancel(flag) {}
    T3Session &session;
    const bool relay_logits;
    const CancelFlag *cancel; // nullptr: none
    std::optional<Generation> generation;
    std::vector<float> prefill_embeds; // until the prefill is complete
    int positions = 0;                 // cache positions the sequence may reach
    int handle = -1;
    std::atomic<bool> stop{false}; // the caller's on_step said stop
    std::deque<StepCopy> steps;    // scheduler -> caller, under mutex

    void deliver(const StepRecord &record) {
        std::lock_guard<std::mutex> lock(mutex);
        steps.emplace_back(record, relay_logits);
        changed.notify_one();
    }
};

T3Batch::T3Batch(const T3Model &model, const BackendOptions &backend, const BatchOptions &options)
    : model_(model), options_(options), backend_(backend),
      samplers_(std::max(0, std::min<int>(options.max_sequences, int(std::thread::hardware_concurrency())) - 1)) {
    if (options.max_sequences < 1) fail("T3 batch: max_sequences is ", options.max_sequences, ", expected >= 1");
    batch_ =
        std::make_unique<T3BatchDecoder>(model, backend_, 2 * options.max_sequences, options.capacity, options.runtime);
    start();
}

T3Batch::~T3Batch() { stop(); }

GenerationResult T3Batch::generate(T3Session &session, const CondEmbeddings &cond,
                                   const std::vector<int32_t> &text_tokens, const SamplingParams &params,
                                   const GenerationHooks &hooks, const KvPrefix *prefix, const CancelFlag *cancel) {
    BatchRequest request(session, hooks.step_logits, cancel);
    GenerationHooks relayed;
    relayed.forced_tokens = hooks.forced_tokens;
    relayed.generator = hooks.generator;
    if (hooks.on_step)
        relayed.on_step = [&request](const StepRecord &record) {
            request.deliver(record);
            return !request.stop.load();
        };
    Generation &generation = request.generation.emplace(session.model(), cond, text_tokens, params, relayed);
    request.positions = generation.prefill_length() + generation.reserved_steps() - 1;
    if (!generation.watched_heads().empty() || !batch_->fits(generation.n_rows(), request.positions) ||
        session.options().kv_type != options_.runtime.kv_type)
        return t3::generate(session, cond, text_tokens, params, hooks, prefix);

    session.watch_heads({});
    session.begin_prefill(generation.n_rows(), generation.prefill_length(), generation.reserved_steps() - 1, prefix);
    request.prefill_embeds = generation.prefill_embeddings();
    int stopped_at = -1; // the step whose on_step said stop (or threw)
    std::exception_ptr hook_error;
    // The request must leave the batch before this call unwinds: a hook that throws stops it like
    // one that says stop, and its exception is rethrown once the scheduler is done with it.
    const auto relay_steps = [&](std::unique_lock<std::mutex> &lock) {
        while (!request.steps.empty()) {
            const StepCopy step = std::move(request.steps.front());
            request.steps.pop_front();
            if (stopped_at >= 0) continue;
            lock.unlock();
            bool go_on = false;
            try {
                go_on = hooks.on_step(step.record());
            } catch (...) {
                hook_error = std::current_exception();
            }
            if (!go_on) {
                stopped_at = step.step;
                request.stop = true;
            }
            lock.lock();
        }
    };
    enqueue(&request);
    {
        std::unique_lock<std::mutex> lock(request.mutex);
        for (;;) {
            request.changed.wait(lock, [&] { return !request.steps.empty() || request.done; });
            relay_steps(lock);
            if (request.done && request.steps.empty()) break;
        }
    }
    if (request.error) std::rethrow_exception(request.error);
    if (hook_error) std::rethrow_exception(hook_error);
    GenerationResult result = generation.result();
    if (stopped_at >= 0) {
        // As alone: generation ends after the step whose hook said stop, unless that step ended it anyway.
        const bool ended_there = int(result.tokens.size()) == stopped_at + 1 &&
                                 (result.end == PieceEnd::eos || result.end == PieceEnd::alignment ||
                                  result.end == PieceEnd::token_repeat || result.end == PieceEnd::silence_tail);
        if (!ended_there) {
            result.tokens.resize(size_t(stopped_at) + 1);
            result.end = PieceEnd::stopped;
            if (result.eos_step > stopped_at) result.eos_step = -1;
        }
    }
    return result;
}

BatchTimes T3Batch::times() const {
    return {double(decode_ns_.load()) * 1e-9, double(sample_ns_.load()) * 1e-9, double(prefill_ns_.load()) * 1e-9};
}

void T3Batch::round() {
    prefill_next();
    if (!active_.empty()) step_batch();
}

// One part of the first waiting request's prefill, once the batch has room for it: the rows of a
// full step while others decode, all of it while none does (it then holds up no one). Only this
// thread joins requests, so the room stays until the prefill is complete; the request then takes
// its first token and joins.
void T3Batch::prefill_next() {
    BatchRequest *request = nullptr;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (waiting_.empty()) return;
        request = waiting_.front();
    }
    Generation &generation = *request->generation;
    T3Session &session = request->session;
    const bool cancelled = request->cancel && request->cancel->requested(); // leaves without waiting for room
    if (!cancelled && !batch_->has_room(generation.n_rows())) return;
    bool joins = false;
    std::exception_ptr error;
    const auto start = std::chrono::steady_clock::now();
    try {
        if (cancelled) throw Cancelled("T3 request cancelled before its prefill was complete");
        const int part = active_.empty() ? session.last_part() : std::max(1, batch_->max_rows() / generation.n_rows());
        // On the batch's backend: parts and steps share one pool of threads, where two pools taking
        // turns would each see the other's threads busy and compute on one (core/cpu_contention.h).
        const std::vector<float> logits = session.prefill_part(request->prefill_embeds, part, &backend_);
        ++prefill_parts_;
        if (session.prefilling()) {
            add_elapsed(prefill_ns_, start);
            return;
        }
        joins = generation.step(logits, nullptr) && !request->stop;
        if (joins) request->handle = batch_->join(session, request->positions);
    } catch (...) {
        error = std::current_exception();
    }
    add_elapsed(prefill_ns_, start);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        waiting_.pop_front();
    }
    if (!joins) {
        request->finish(error);
        return;
    }
    request->prefill_embeds = {};
    active_.push_back(request);
    publish_active();
}

void T3Batch::step_batch() {
    std::vector<T3BatchDecoder::Step> steps;
    steps.reserve(active_.size());
    for (const BatchRequest *r : active_) steps.push_back({r->handle, r->generation->next_embedding()});
    std::vector<std::vector<float>> logits;
    auto start = std::chrono::steady_clock::now();
    try {
        logits = batch_->decode(steps);
    } catch (...) {
        const std::vector<BatchRequest *> failed = std::move(active_);
        active_.clear();
        publish_active();
        for (BatchRequest *r : failed) {
            batch_->leave(r->handle);
            r->finish(std::current_exception());
        }
        return;
    }
    count_step();
    start = add_elapsed(decode_ns_, start);
    // Each request's sampler, guards and hook relay touch only its own state.
    std::vector<char> go_on(active_.size(), 0);
    std::vector<std::exception_ptr> errors(active_.size());
    samplers_.run(active_.size(), [&](size_t i) {
        try {
            go_on[i] = active_[i]->generation->step(logits[i], nullptr);
        } catch (...) {
            errors[i] = std::current_exception();
        }
    });
    add_elapsed(sample_ns_, start);
    std::vector<BatchRequest *> still;
    std::vector<std::pair<BatchRequest *, std::exception_ptr>> ended;
    for (size_t i = 0; i < active_.size(); ++i) {
        BatchRequest *r = active_[i];
        if (go_on[i]) {
            still.push_back(r);
        } else {
            batch_->leave(r->handle); // its rows are free for the next step
            ended.emplace_back(r, errors[i]);
        }
    }
    active_ = std::move(still);
    publish_active(); // before the callers wake: a request that ended is out of the count
    for (auto &[r, error] : ended) r->finish(error);
}

} // namespace chatterbox::t3
