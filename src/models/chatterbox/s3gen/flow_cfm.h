#pragma once
// The conditional flow-matching solver (spec s3gen.md §6, flow_matching.py solve_euler and
// basic_euler): Euler steps from t_k to r = t_{k+1}, x += (r − t)·v.
//   standard (English, multilingual): cosine time grid; the estimator evaluates the CFG pair as
//     ONE batch of two rows — row 0 conditional (mu, speaker, prompt mel), row 1 unconditional
//     (those zeroed; sample and time identical) — combined as v = (1 + rate)·v_cond − rate·v_uncond.
//   mean flow (Turbo, Nano): linear grid, the estimator sees the pair (t, r), one conditional row,
//     no CFG (cfg_rate 0).
//
// The estimator graph is built once per frame count and reused by every step; per step the host
// writes the sample and the time embedding (and re-writes the constant conditioning, since the
// graph allocator may reuse an input's memory once it has been read).

#include "core/backend.h"
#include "core/graph.h"
#include "models/chatterbox/s3gen/flow_estimator.h"
#include "models/chatterbox/s3gen/flow_hparams.h"

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace chatterbox::s3gen {

// t_k = k/n, k = 0 … n, as torch.linspace computes it in f32.
std::vector<float> linear_time_grid(int steps);
// t_k = 1 − cos(π/2 · k/n), k = 0 … n, computed in f32 as torch.linspace + cos do.
std::vector<float> cosine_time_grid(int steps);
// Euler steps of a solve: `requested`, or the model's own hp.cfm_steps when it is 0 (the official
// 10; the mean flow's 2). Fewer steps are proportionally cheaper and further from the official
// output (bench/README.md "Fewer CFM steps"). Throws Error outside [0, kMaxCfmSteps].
int cfm_steps(const FlowHParams &hp, int requested);
// The solver's grid of cfm_steps(hp, requested) steps (cosine or linear by hp.cfm_cosine_grid).
std::vector<float> cfm_time_grid(const FlowHParams &hp, int requested = 0);

// n values from N(0, 1) drawn from rng (Box–Muller); the same rng state gives the same values.
std::vector<float> standard_normal(size_t n, std::mt19937_64 &rng);

// The estimator's attention where the caller chooses none: `blocked` (oneDNN f32 products: 1.3x ggml's
// flash over a whole CFM on the Intel VM, bench/history/2026-12-03-flow-speedups-intel.md) in builds
// with oneDNN, else `flash`. Off the CPU both are computed on the plain path.
nn::AttentionPath default_estimator_attention();

// The estimator over one request, or over several batched: each request takes hp.cfg_rows() rows,
// is padded at the end to the longest, attends over its own frames only and runs its own step
// (time), so its velocity is what it gets alone (estimator_blocks.h says why padding is exact).
class EstimatorGraph {
  public:
    // One request of `frames` frames.
    EstimatorGraph(const Estimator &estimator, const FlowHParams &hp, Backend &backend, int64_t frames,
                   nn::AttentionPath attention);
    // Requests of these frame counts, in this order.
    EstimatorGraph(const Estimator &estimator, const FlowHParams &hp, Backend &backend,
                   const std::vector<int64_t> &request_frames, nn::AttentionPath attention);
    EstimatorGraph(const EstimatorGraph &) = delete;
    EstimatorGraph &operator=(const EstimatorGraph &) = delete;

    int64_t frames() const { return frames_; } // the longest request's
    const std::vector<int64_t> &request_frames() const { return request_frames_; }

    // A request's conditional-row inputs, PyTorch order: mu (80, T), speaker (80), prompt condition
    // (80, T) (the prompt mel in its first frames, zeros after). The unconditional row is zero.
    void set_conditioning(size_t request, const std::vector<float> &mu, const std::vector<float> &speaker,
                          const std::vector<float> &prompt_condition);
    void set_conditioning(const std::vector<float> &mu, const std::vector<float> &speaker,
                          const std::vector<float> &prompt_condition) {
        set_conditioning(0, mu, speaker, prompt_condition);
    }

    // One request's sample x (80, T) and its step from t to r (r is seen by the mean-flow estimator only).
    struct RequestStep {
        const std::vector<float> *x = nullptr;
        float t = 0, r = 0;
    };
    // One estimator run for every request (steps in request order): each request's rows
    // (R, 80, T), R = hp.cfg_rows(), conditional row first.
    std::vector<std::vector<float>> velocities(const std::vector<RequestStep> &steps);
    // The same for the only request.
    std::vector<float> velocity(const std::vector<float> &x, float t, float r);

    // Of the last run, the first request: time_mlp of each time (P, 1024), P = hp.time_points()
    // (t, then r), and the time embedding the estimator used (1024).
    std::vector<float> time_mlp_output();
    std::vector<float> time_embedding();

  private:
    const FlowHParams &hp_;
    std::vector<int64_t> request_frames_;
    int64_t frames_ = 0, rows_ = 0, time_rows_ = 1;
    std::vector<float> conditioning_values_; // (rows, T, 240), set by set_conditioning
    std::vector<bool> conditioned_;
    GraphRunner graph_;
    ggml_tensor *sample_ = nullptr;       // (rows, T, 80)
    ggml_tensor *conditioning_ = nullptr; // (rows, T, 240)
    ggml_tensor *sinusoids_ = nullptr;    // (S, P, 320): S = 1 shared, or one per row
    ggml_tensor *velocity_ = nullptr;     // (rows, 80, T)
    EstimatorTimeTaps time_taps_;
};

// Called after every Euler step with the step index and the sample after it (80, T).
using CfmStepObserver = std::function<void(int step, const std::vector<float> &sample)>;

// One Euler step x += dt·v of a request's sample x (80, T), v its estimator rows (R, 80, T),
// combined with CFG rate hp.cfg_rate when there are two.
void euler_update(std::vector<float> &x, const std::vector<float> &v, float dt, const FlowHParams &hp);

// Integrates from the initial noise (80, T) to t = 1 with one Euler step per interval of `grid`
// (cfm_time_grid), combining the rows with CFG rate hp.cfg_rate when there are two; the graph
// must be conditioned. Returns the final sample (80, T).
std::vector<float> solve_euler(EstimatorGraph &graph, std::vector<float> noise, const FlowHParams &hp,
                               const std::vector<float> &grid, const CfmStepObserver &observer = {});

} // namespace chatterbox::s3gen
