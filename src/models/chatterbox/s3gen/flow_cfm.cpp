#include "models/chatterbox/s3gen/flow_cfm.h"

#include "core/error.h"
#include "kernels/onednn.h"

#include <algorithm>
#include <cmath>

namespace chatterbox::s3gen {

nn::AttentionPath default_estimator_attention() {
    return kernels::onednn_available() ? nn::AttentionPath::blocked : nn::AttentionPath::flash;
}

std::vector<float> linear_time_grid(int steps) {
    if (steps <= 0) fail("CFM time grid: need at least one step, got ", steps);
    // torch.linspace(0, 1, steps + 1) in f32: the first half counts up from 0, the rest down from 1.
    const int points = steps + 1;
    const float step = 1.0f / float(steps);
    std::vector<float> grid(static_cast<size_t>(points));
    for (int k = 0; k < points; ++k)
        grid[size_t(k)] = k < points / 2 ? step * float(k) : 1.0f - step * float(points - k - 1);
    return grid;
}

std::vector<float> cosine_time_grid(int steps) {
    std::vector<float> grid = linear_time_grid(steps);
    const float pi = float(M_PI); // torch.pi meets an f32 tensor
    for (float &t : grid) t = 1.0f - float(std::cos(double(t * 0.5f * pi)));
    return grid;
}

int cfm_steps(const FlowHParams &hp, int requested) {
    if (requested < 0 || requested > kMaxCfmSteps)
        fail("CFM steps: ", requested, " requested, expected 1 .. ", kMaxCfmSteps, " (0: the model's ", hp.cfm_steps,
             ")");
    return requested ? requested : hp.cfm_steps;
}

std::vector<float> cfm_time_grid(const FlowHParams &hp, int requested) {
    const int steps = cfm_steps(hp, requested);
    return hp.cfm_cosine_grid ? cosine_time_grid(steps) : linear_time_grid(steps);
}

std::vector<float> standard_normal(size_t n, std::mt19937_64 &rng) {
    auto uniform = [&rng] { return (double(rng() >> 11) + 1.0) * 0x1.0p-53; }; // (0, 1]
    std::vector<float> values(n);
    for (size_t i = 0; i < n; i += 2) {
        const double radius = std::sqrt(-2.0 * std::log(uniform()));
        const double angle = 2.0 * M_PI * uniform();
        values[i] = float(radius * std::cos(angle));
        if (i + 1 < n) values[i + 1] = float(radius * std::sin(angle));
    }
    return values;
}

namespace {

// CUDA's flash attention rounds f32 keys and values to f16 (5e-4 on an estimator step against the
// golden 1e-4, on an H200), and the blocked path is a CPU op; off the CPU the estimator attends in
// f32 products instead.
nn::AttentionPath on_backend(nn::AttentionPath attention, const Backend &backend) {
    const bool cpu_only = attention == nn::AttentionPath::flash || attention == nn::AttentionPath::blocked;
    return cpu_only && !backend.is_cpu() ? nn::AttentionPath::plain : attention;
}

// The graph's tensor budget: one request's estimator, and, where requests of different lengths each
// attend over their own frames, every transformer block's attention once more per request (16 such
// requests on the plain path needed ~17.5k tensors on an H200, past GraphRunner's default).
size_t estimator_graph_nodes(const std::vector<int64_t> &request_frames) {
    return GraphRunner::kDefaultMaxNodes + 2048 * request_frames.size();
}

} // namespace

EstimatorGraph::EstimatorGraph(const Estimator &estimator, const FlowHParams &hp, Backend &backend, int64_t frames,
                               nn::AttentionPath attention)
    : EstimatorGraph(estimator, hp, backend, std::vector<int64_t>{frames}, attention) {}

EstimatorGraph::EstimatorGraph(const Estimator &estimator, const FlowHParams &hp, Backend &backend,
                               const std::vector<int64_t> &request_frames, nn::AttentionPath attention)
    : hp_(hp), request_frames_(request_frames), graph_(backend, estimator_graph_nodes(request_frames)) {
    if (request_frames.empty()) fail("EstimatorGraph: no request");
    const int64_t per_request = hp.cfg_rows();
    AttentionSegments segments;
    for (size_t i = 0; i < request_frames.size(); ++i) {
        if (request_frames[i] <= 0) fail("EstimatorGraph: need at least one frame, got ", request_frames[i]);
        frames_ = std::max(frames_, request_frames[i]);
        segments.push_back({int64_t(i) * per_request, per_request, request_frames[i]});
    }
    // Requests of one length share the attention call; only padding needs a call per request.
    if (std::all_of(request_frames.begin(), request_frames.end(), [&](int64_t f) { return f == frames_; }))
        segments.clear();
    rows_ = per_request * int64_t(request_frames.size());
    time_rows_ = request_frames.size() == 1 ? 1 : rows_; // one request: every row at its time
    conditioning_values_.assign(size_t(rows_ * frames_ * hp.conditioning_channels()), 0.0f);
    conditioned_.assign(request_frames.size(), false);

    ggml_context *ctx = graph_.ctx();
    sample_ = graph_.input("cfm.sample", GGML_TYPE_F32, {rows_, frames_, hp.mel_bins});
    conditioning_ = graph_.input("cfm.conditioning", GGML_TYPE_F32, {rows_, frames_, hp.conditioning_channels()});
    sinusoids_ =
        graph_.input("cfm.time_sinusoids", GGML_TYPE_F32, {time_rows_, hp.time_points(), hp.time_sinusoid_dim()});
    ggml_tensor *v = estimator(ctx, sample_, conditioning_, sinusoids_, on_backend(attention, backend), &time_taps_,
                               segments);                         // [80, T, R]
    velocity_ = ggml_cont(ctx, ggml_permute(ctx, v, 1, 0, 2, 3)); // ggml [T, 80, R] = (R, 80, T)
    graph_.build({velocity_, time_taps_.time_mlp, time_taps_.time_embedding});
}

void EstimatorGraph::set_conditioning(size_t request, const std::vector<float> &mu, const std::vector<float> &speaker,
                                      const std::vector<float> &prompt_condition) {
    if (request >= request_frames_.size())
        fail("EstimatorGraph::set_conditioning: request ", request, " of ", request_frames_.size());
    const size_t mel = size_t(hp_.mel_bins), frames = size_t(request_frames_[request]);
    if (mu.size() != mel * frames || speaker.size() != mel || prompt_condition.size() != mel * frames)
        fail("EstimatorGraph::set_conditioning: expected mu and prompt condition of ", mel, " x ", frames,
             " values and a speaker vector of ", mel, ", got ", mu.size(), ", ", prompt_condition.size(), " and ",
             speaker.size());
    // (rows, T, 240): per frame [mu | speaker | prompt] in the request's first row; its
    // unconditional row and its padding frames stay zero.
    const size_t channels = 3 * mel;
    float *row = conditioning_values_.data() + request * size_t(hp_.cfg_rows()) * size_t(frames_) * channels;
    for (size_t t = 0; t < frames; ++t) {
        float *dst = row + t * channels;
        for (size_t c = 0; c < mel; ++c) {
            dst[c] = mu[c * frames + t];
            dst[mel + c] = speaker[c];
            dst[2 * mel + c] = prompt_condition[c * frames + t];
        }
    }
    conditioned_[request] = true;
}

std::vector<std::vector<float>> EstimatorGraph::velocities(const std::vector<RequestStep> &steps) {
    if (steps.size() != request_frames_.size())
        fail("EstimatorGraph::velocities: ", steps.size(), " steps for ", request_frames_.size(), " requests");
    const size_t mel = size_t(hp_.mel_bins), frames = size_t(frames_), per_request = size_t(hp_.cfg_rows());
    std::vector<float> sample(size_t(rows_) * frames * mel, 0.0f), sinusoids;
    for (size_t i = 0; i < steps.size(); ++i) {
        if (!conditioned_[i]) fail("EstimatorGraph::velocities before set_conditioning of request ", i);
        const size_t own = size_t(request_frames_[i]);
        const std::vector<float> &x = *steps[i].x;
        if (x.size() != mel * own)
            fail("EstimatorGraph::velocities: request ", i, " has a sample of ", x.size(), " values, expected ", mel,
                 " x ", own);
        // The sample, frame-major, in every row of the request (the CFG pair sees the same x).
        for (size_t row = i * per_request; row < (i + 1) * per_request; ++row)
            for (size_t t = 0; t < own; ++t)
                for (size_t c = 0; c < mel; ++c) sample[(row * frames + t) * mel + c] = x[c * own + t];
        const size_t time_copies = time_rows_ == 1 ? 1 : per_request; // time_rows_ 1: the only request
        std::vector<float> times = timestep_sinusoid(steps[i].t, hp_.time_sinusoid_dim(), hp_.time_scale);
        if (hp_.time_points() > 1) {
            const std::vector<float> end = timestep_sinusoid(steps[i].r, hp_.time_sinusoid_dim(), hp_.time_scale);
            times.insert(times.end(), end.begin(), end.end());
        }
        for (size_t copy = 0; copy < time_copies; ++copy) sinusoids.insert(sinusoids.end(), times.begin(), times.end());
    }
    // Every input is written before every run: the graph allocator may reuse an input's memory for
    // intermediate results once the input has been read.
    graph_.set_input(conditioning_, conditioning_values_);
    graph_.set_input(sample_, sample);
    graph_.set_input(sinusoids_, sinusoids);
    graph_.compute();
    const std::vector<float> all = graph_.read_f32(velocity_); // (rows, 80, T)
    std::vector<std::vector<float>> out(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
        const size_t own = size_t(request_frames_[i]);
        out[i].resize(per_request * mel * own);
        for (size_t r = 0; r < per_request; ++r)
            for (size_t c = 0; c < mel; ++c)
                std::copy_n(all.begin() + ptrdiff_t(((i * per_request + r) * mel + c) * frames), own,
                            out[i].begin() + ptrdiff_t((r * mel + c) * own));
    }
    return out;
}

std::vector<float> EstimatorGraph::velocity(const std::vector<float> &x, float t, float r) {
    if (request_frames_.size() != 1)
        fail("EstimatorGraph::velocity: the graph holds ", request_frames_.size(), " requests");
    return std::move(velocities({RequestStep{&x, t, r}})[0]);
}

std::vector<float> EstimatorGraph::time_mlp_output() {
    std::vector<float> all = graph_.read_f32(time_taps_.time_mlp);
    all.resize(size_t(hp_.time_points() * hp_.time_embed_dim()));
    return all;
}

std::vector<float> EstimatorGraph::time_embedding() {
    std::vector<float> all = graph_.read_f32(time_taps_.time_embedding);
    all.resize(size_t(hp_.time_embed_dim()));
    return all;
}

void euler_update(std::vector<float> &x, const std::vector<float> &v, float dt, const FlowHParams &hp) {
    const size_t n = x.size();
    const bool cfg = hp.cfg_rows() > 1;
    if (v.size() != n * size_t(hp.cfg_rows()))
        fail("euler_update: ", v.size(), " velocity values for a sample of ", n, " and ", hp.cfg_rows(), " rows");
    // Python floats in the reference, each rounded to f32 where it meets the f32 tensors.
    const float cond_weight = float(1.0 + hp.cfg_rate), uncond_weight = float(hp.cfg_rate);
    for (size_t i = 0; i < n; ++i) {
        const float combined = cfg ? cond_weight * v[i] - uncond_weight * v[n + i] : v[i];
        x[i] = x[i] + dt * combined;
    }
}

std::vector<float> solve_euler(EstimatorGraph &graph, std::vector<float> x, const FlowHParams &hp,
                               const std::vector<float> &grid, const CfmStepObserver &observer) {
    const size_t n = size_t(hp.mel_bins * graph.frames());
    if (x.size() != n) fail("solve_euler: initial noise has ", x.size(), " values, expected ", n);
    if (grid.size() < 2) fail("solve_euler: a time grid of ", grid.size(), " points has no step");
    for (int step = 0; step + 1 < int(grid.size()); ++step) {
        const float t = grid[size_t(step)], r = grid[size_t(step) + 1];
        euler_update(x, graph.velocity(x, t, r), r - t, hp);
        if (observer) observer(step, x);
    }
    return x;
}

} // namespace chatterbox::s3gen
