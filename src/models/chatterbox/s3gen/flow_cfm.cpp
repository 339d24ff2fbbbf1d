#include "models/chatterbox/s3gen/flow_cfm.h"

#include "core/error.h"

#include <cmath>

namespace chatterbox::s3gen {

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

std::vector<float> cfm_time_grid(const FlowHParams &hp) {
    return hp.cfm_cosine_grid ? cosine_time_grid(hp.cfm_steps) : linear_time_grid(hp.cfm_steps);
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

EstimatorGraph::EstimatorGraph(const Estimator &estimator, const FlowHParams &hp, Backend &backend, int64_t frames,
                               nn::AttentionPath attention)
    : hp_(hp), frames_(frames), graph_(backend) {
    if (frames <= 0) fail("EstimatorGraph: need at least one frame, got ", frames);
    ggml_context *ctx = graph_.ctx();
    const int64_t mel = hp.mel_bins, rows = hp.cfg_rows();
    sample_ = graph_.input("cfm.sample", GGML_TYPE_F32, {mel, frames});
    conditioning_ = graph_.input("cfm.conditioning", GGML_TYPE_F32, {rows, frames, hp.conditioning_channels()});
    sinusoids_ = graph_.input("cfm.time_sinusoids", GGML_TYPE_F32, {hp.time_points(), hp.time_sinusoid_dim()});

    // The sample is the same in every row: frame-major, then repeated.
    ggml_tensor *x = ggml_reshape_3d(ctx, ggml_cont(ctx, ggml_transpose(ctx, sample_)), mel, frames, 1);
    if (rows > 1) x = ggml_repeat_4d(ctx, x, mel, frames, rows, 1);
    ggml_tensor *v = estimator(ctx, x, conditioning_, sinusoids_, attention, &time_taps_); // ggml [80, T, R]
    velocity_ = ggml_cont(ctx, ggml_permute(ctx, v, 1, 0, 2, 3)); // ggml [T, 80, R] = (R, 80, T)
    graph_.build({velocity_, time_taps_.time_mlp, time_taps_.time_embedding});
}

void EstimatorGraph::set_conditioning(const std::vector<float> &mu, const std::vector<float> &speaker,
                                      const std::vector<float> &prompt_condition) {
    const size_t mel = size_t(hp_.mel_bins), frames = size_t(frames_);
    if (mu.size() != mel * frames || speaker.size() != mel || prompt_condition.size() != mel * frames)
        fail("EstimatorGraph::set_conditioning: expected mu and prompt condition of ", mel, " x ", frames,
             " values and a speaker vector of ", mel, ", got ", mu.size(), ", ", prompt_condition.size(), " and ",
             speaker.size());
    // (R, T, 240): per frame [mu | speaker | prompt] in row 0, zeros in the unconditional row 1.
    const size_t channels = 3 * mel;
    std::vector<float> packed(size_t(hp_.cfg_rows()) * frames * channels, 0.0f);
    for (size_t t = 0; t < frames; ++t) {
        float *dst = packed.data() + t * channels;
        for (size_t c = 0; c < mel; ++c) {
            dst[c] = mu[c * frames + t];
            dst[mel + c] = speaker[c];
            dst[2 * mel + c] = prompt_condition[c * frames + t];
        }
    }
    conditioning_values_ = std::move(packed);
}

std::vector<float> EstimatorGraph::velocity(const std::vector<float> &x, float t, float r) {
    if (conditioning_values_.empty()) fail("EstimatorGraph::velocity before set_conditioning");
    // Every input is written before every run: the graph allocator may reuse an input's memory for
    // intermediate results once the input has been read.
    graph_.set_input(conditioning_, conditioning_values_);
    graph_.set_input(sample_, x);
    std::vector<float> sinusoids = timestep_sinusoid(t, hp_.time_sinusoid_dim(), hp_.time_scale);
    if (hp_.time_points() > 1) {
        const std::vector<float> end = timestep_sinusoid(r, hp_.time_sinusoid_dim(), hp_.time_scale);
        sinusoids.insert(sinusoids.end(), end.begin(), end.end());
    }
    graph_.set_input(sinusoids_, sinusoids);
    graph_.compute();
    return graph_.read_f32(velocity_);
}

std::vector<float> EstimatorGraph::time_mlp_output() { return graph_.read_f32(time_taps_.time_mlp); }

std::vector<float> EstimatorGraph::time_embedding() { return graph_.read_f32(time_taps_.time_embedding); }

std::vector<float> solve_euler(EstimatorGraph &graph, std::vector<float> x, const FlowHParams &hp,
                               const CfmStepObserver &observer) {
    const size_t n = size_t(hp.mel_bins * graph.frames());
    if (x.size() != n) fail("solve_euler: initial noise has ", x.size(), " values, expected ", n);
    const std::vector<float> grid = cfm_time_grid(hp);
    const bool cfg = hp.cfg_rows() > 1;
    // Python floats in the reference, each rounded to f32 where it meets the f32 tensors.
    const float cond_weight = float(1.0 + hp.cfg_rate), uncond_weight = float(hp.cfg_rate);
    for (int step = 0; step < hp.cfm_steps; ++step) {
        const float t = grid[size_t(step)], r = grid[size_t(step) + 1], dt = r - t;
        const std::vector<float> v = graph.velocity(x, t, r);
        for (size_t i = 0; i < n; ++i) {
            const float combined = cfg ? cond_weight * v[i] - uncond_weight * v[n + i] : v[i];
            x[i] = x[i] + dt * combined;
        }
        if (observer) observer(step, x);
    }
    return x;
}

} // namespace chatterbox::s3gen
