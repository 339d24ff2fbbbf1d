#include "models/chatterbox/s3gen/flow_cfm.h"

#include "core/error.h"

#include <cmath>

namespace chatterbox::s3gen {

std::vector<float> cosine_time_grid(int steps) {
    if (steps <= 0) fail("cosine_time_grid: need at least one step, got ", steps);
    // torch.linspace(0, 1, steps + 1) in f32: the first half counts up from 0, the rest down from 1.
    const int points = steps + 1;
    const float step = 1.0f / float(steps);
    const float pi = float(M_PI); // torch.pi meets an f32 tensor
    std::vector<float> grid(static_cast<size_t>(points));
    for (int k = 0; k < points; ++k) {
        const float linear = k < points / 2 ? step * float(k) : 1.0f - step * float(points - k - 1);
        grid[size_t(k)] = 1.0f - float(std::cos(double(linear * 0.5f * pi)));
    }
    return grid;
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
    const int64_t mel = hp.mel_bins;
    sample_ = graph_.input("cfm.sample", GGML_TYPE_F32, {mel, frames});
    conditioning_ = graph_.input("cfm.conditioning", GGML_TYPE_F32, {2, frames, hp.conditioning_channels()});
    sinusoid_ = graph_.input("cfm.time_sinusoid", GGML_TYPE_F32, {1, hp.time_sinusoid_dim()});

    // The sample is the same in both rows: frame-major, then repeated.
    ggml_tensor *x = ggml_reshape_3d(ctx, ggml_cont(ctx, ggml_transpose(ctx, sample_)), mel, frames, 1);
    x = ggml_repeat_4d(ctx, x, mel, frames, 2, 1);
    ggml_tensor *v = estimator(ctx, x, conditioning_, sinusoid_, attention); // ggml [80, T, 2]
    velocity_ = ggml_cont(ctx, ggml_permute(ctx, v, 1, 0, 2, 3));            // ggml [T, 80, 2] = (2, 80, T)
    graph_.build({velocity_});
}

void EstimatorGraph::set_conditioning(const std::vector<float> &mu, const std::vector<float> &speaker,
                                      const std::vector<float> &prompt_condition) {
    const size_t mel = size_t(hp_.mel_bins), frames = size_t(frames_);
    if (mu.size() != mel * frames || speaker.size() != mel || prompt_condition.size() != mel * frames)
        fail("EstimatorGraph::set_conditioning: expected mu and prompt condition of ", mel, " x ", frames,
             " values and a speaker vector of ", mel, ", got ", mu.size(), ", ", prompt_condition.size(), " and ",
             speaker.size());
    // (2, T, 240): per frame [mu | speaker | prompt] in row 0, zeros in row 1.
    const size_t channels = 3 * mel;
    std::vector<float> packed(2 * frames * channels, 0.0f);
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

std::vector<float> EstimatorGraph::velocity(const std::vector<float> &x, float t) {
    if (conditioning_values_.empty()) fail("EstimatorGraph::velocity before set_conditioning");
    // Every input is written before every run: the graph allocator may reuse an input's memory for
    // intermediate results once the input has been read.
    graph_.set_input(conditioning_, conditioning_values_);
    graph_.set_input(sample_, x);
    graph_.set_input(sinusoid_, timestep_sinusoid(t, hp_.time_sinusoid_dim(), hp_.time_scale));
    graph_.compute();
    return graph_.read_f32(velocity_);
}

std::vector<float> solve_euler_cfg(EstimatorGraph &graph, std::vector<float> x, const FlowHParams &hp,
                                   const CfmStepObserver &observer) {
    const size_t n = size_t(hp.mel_bins * graph.frames());
    if (x.size() != n) fail("solve_euler_cfg: initial noise has ", x.size(), " values, expected ", n);
    const std::vector<float> grid = cosine_time_grid(hp.cfm_steps);
    // Python floats in the reference, each rounded to f32 where it meets the f32 tensors.
    const float cond_weight = float(1.0 + hp.cfg_rate), uncond_weight = float(hp.cfg_rate);
    for (int step = 0; step < hp.cfm_steps; ++step) {
        const float t = grid[size_t(step)], dt = grid[size_t(step) + 1] - t;
        const std::vector<float> v = graph.velocity(x, t);
        for (size_t i = 0; i < n; ++i) {
            const float combined = cond_weight * v[i] - uncond_weight * v[n + i];
            x[i] = x[i] + dt * combined;
        }
        if (observer) observer(step, x);
    }
    return x;
}

} // namespace chatterbox::s3gen
