#include "models/chatterbox/hift/vocoder_batch.h"

#include "core/error.h"

#include <algorithm>

namespace chatterbox::hift {

struct VocoderBatchRequest : BatchRequestEnd {
    VocoderBatchRequest(const std::vector<float> &m, int64_t t, const SourceNoise &n, const CancelFlag *c)
        : mel(m), frames(t), noise(n), cancel(c) {}
    const std::vector<float> &mel;
    int64_t frames;
    const SourceNoise &noise;
    const CancelFlag *cancel;
    VocoderTaps result;

    bool cancelled() const { return cancel && cancel->requested(); }
};

VocoderBatch::VocoderBatch(const VocoderModel &model, const BackendOptions &backend, const VocoderBatchOptions &options)
    : model_(model), options_(options), backend_(backend) {
    if (options.max_requests < 1) fail("vocoder batch: max_requests is ", options.max_requests, ", expected >= 1");
    if (!(options.max_padding >= 0)) fail("vocoder batch: max_padding is ", options.max_padding, ", expected >= 0");
    if (options.max_frames < 0) fail("vocoder batch: max_frames is ", options.max_frames, ", expected >= 0");
    if (options_.max_frames == 0) options_.max_frames = model.hparams().max_frames;
    start();
}

VocoderBatch::~VocoderBatch() { stop(); }

VocoderTaps VocoderBatch::vocode(const std::vector<float> &mel, const SourceNoise &noise, const CancelFlag *cancel) {
    const int64_t frames = model_.validate(mel);
    check_source_noise(noise, frames, model_.hparams());
    VocoderBatchRequest request(mel, frames, noise, cancel);
    submit_and_wait(&request);
    return std::move(request.result);
}

void VocoderBatch::round() {
    admit_waiting();
    if (!active_.empty()) run_batch();
}

void VocoderBatch::admit_waiting() {
    std::vector<VocoderBatchRequest *> gone;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::deque<VocoderBatchRequest *> still_waiting;
        int64_t longest = 0, total = 0;
        for (VocoderBatchRequest *r : waiting_) {
            if (r->cancelled()) {
                gone.push_back(r);
                continue;
            }
            const int64_t run_longest = std::max(longest, r->frames), run_total = total + r->frames;
            const int64_t padded = run_longest * int64_t(active_.size() + 1);
            const bool fits =
                active_.empty() || (int(active_.size()) < options_.max_requests && padded <= options_.max_frames &&
                                    double(padded) <= (1 + options_.max_padding) * double(run_total));
            if (fits) {
                active_.push_back(r);
                longest = run_longest;
                total = run_total;
            } else {
                still_waiting.push_back(r);
            }
        }
        waiting_ = std::move(still_waiting);
    }
    publish_active();
    for (VocoderBatchRequest *r : gone) r->finish(std::make_exception_ptr(Cancelled("synthesis cancelled")));
}

void VocoderBatch::run_batch() {
    std::exception_ptr error;
    try {
        std::vector<int64_t> frames;
        std::vector<const std::vector<float> *> mels;
        for (const VocoderBatchRequest *r : active_) {
            frames.push_back(r->frames);
            mels.push_back(&r->mel);
        }
        if (!graphs_ || graphs_->frames() != frames) {
            graphs_.reset(); // free the old graphs' buffers before allocating the new ones
            graphs_ = std::make_unique<VocoderGraphs>(model_, backend_, frames);
        }
        std::vector<std::vector<float>> f0 = graphs_->predict_f0(mels);
        std::vector<const std::vector<float> *> sources;
        for (size_t i = 0; i < active_.size(); ++i) {
            VocoderTaps &out = active_[i]->result;
            out.f0 = std::move(f0[i]);
            out.source = sine_source(out.f0, active_[i]->noise, model_.source_merge(), model_.hparams());
            sources.push_back(&out.source);
        }
        std::vector<std::vector<float>> raw = graphs_->decode(mels, sources);
        for (size_t i = 0; i < active_.size(); ++i) active_[i]->result.raw = std::move(raw[i]);
        count_step();
    } catch (...) {
        graphs_.reset();
        error = std::current_exception();
    }
    const std::vector<VocoderBatchRequest *> ended = std::move(active_);
    active_.clear();
    publish_active(); // before the callers wake: a request that ended is out of the count
    for (VocoderBatchRequest *r : ended) r->finish(error);
}

} // namespace chatterbox::hift
