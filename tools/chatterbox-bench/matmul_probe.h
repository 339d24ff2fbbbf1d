#pragma once
// The best matrix-multiply rate ggml reaches on this backend: the yardstick for compute-bound
// stages (the CFM estimator is linear layers, convolutions as matrix products, and attention).

#include "core/backend.h"

#include "ggml.h"

#include <vector>

namespace chatterbox::bench {

struct MatmulRate {
    ggml_type weight_type = GGML_TYPE_F32;
    int64_t k = 0, m = 0, n = 0; // weight (m, k) times activations (n, k), f32 activations
    double gflop_per_s = 0;      // 2·k·m·n per product, best of the repeats
};

// Times ggml_mul_mat of an (m, k) weight of each type with n f32 activation columns.
std::vector<MatmulRate> measure_matmul_rates(Backend &backend, const std::vector<ggml_type> &weight_types, int64_t k,
                                             int64_t m, int64_t n, int repeats = 8);

} // namespace chatterbox::bench
