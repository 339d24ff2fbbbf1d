#pragma once
// The conditional flow-matching solver (spec s3gen.md §6.1, flow_matching.py solve_euler):
// Euler steps on the cosine time grid, each evaluating the estimator on the CFG pair as ONE
// batch of two rows — row 0 conditional (mu, speaker, prompt mel), row 1 unconditional (those
// zeroed; sample and time identical) — and combining v = (1 + r)·v_cond − r·v_uncond.
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

// t_k = 1 − cos(π/2 · k/n), k = 0 … n, computed in f32 as torch.linspace + cos do.
std::vector<float> cosine_time_grid(int steps);

// n values from N(0, 1) drawn from rng (Box–Muller); the same rng state gives the same values.
std::vector<float> standard_normal(size_t n, std::mt19937_64 &rng);

class EstimatorGraph {
  public:
    EstimatorGraph(const Estimator &estimator, const FlowHParams &hp, Backend &backend, int64_t frames,
                   nn::AttentionPath attention);
    EstimatorGraph(const EstimatorGraph &) = delete;
    EstimatorGraph &operator=(const EstimatorGraph &) = delete;

    int64_t frames() const { return frames_; }

    // The conditional row's inputs, PyTorch order: mu (80, T), speaker (80), prompt condition
    // (80, T) (the prompt mel in its first frames, zeros after). The unconditional row is zero.
    void set_conditioning(const std::vector<float> &mu, const std::vector<float> &speaker,
                          const std::vector<float> &prompt_condition);
    // Estimator output for sample x (80, T) at time t: (2, 80, T), conditional row first.
    std::vector<float> velocity(const std::vector<float> &x, float t);

  private:
    const FlowHParams &hp_;
    int64_t frames_;
    std::vector<float> conditioning_values_; // (2, T, 240), set by set_conditioning
    GraphRunner graph_;
    ggml_tensor *sample_ = nullptr;       // (80, T)
    ggml_tensor *conditioning_ = nullptr; // (2, T, 240)
    ggml_tensor *sinusoid_ = nullptr;     // (1, 320)
    ggml_tensor *velocity_ = nullptr;     // (2, 80, T)
};

// Called after every Euler step with the step index and the sample after it (80, T).
using CfmStepObserver = std::function<void(int step, const std::vector<float> &sample)>;

// Integrates from the initial noise (80, T) to t = 1 with hp.cfm_steps Euler steps and CFG
// rate hp.cfg_rate; the graph must be conditioned. Returns the final sample (80, T).
std::vector<float> solve_euler_cfg(EstimatorGraph &graph, std::vector<float> noise, const FlowHParams &hp,
                                   const CfmStepObserver &observer = {});

} // namespace chatterbox::s3gen
