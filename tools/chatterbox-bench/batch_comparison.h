#pragma once
// The figures a batching bench reports for one level: the same requests one after another and
// batched, their times, ratio, the batch's mean occupancy and the largest output difference.

#include "core/batch_loop.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace chatterbox::bench {

inline nlohmann::json batch_comparison(const std::vector<std::vector<float>> &sequential,
                                       const std::vector<std::vector<float>> &batched, double sequential_s,
                                       double batched_s, const BatchCounts &counts) {
    float worst = 0;
    for (size_t i = 0; i < sequential.size(); ++i)
        for (size_t j = 0; j < sequential[i].size(); ++j)
            worst = std::max(worst, std::abs(sequential[i][j] - batched[i][j]));
    return {{"sequential_s", sequential_s},
            {"batched_s", batched_s},
            {"ratio", batched_s > 0 ? sequential_s / batched_s : 0},
            {"mean_occupancy", counts.steps ? double(counts.request_steps) / double(counts.steps) : 0},
            {"max_difference", worst}};
}

} // namespace chatterbox::bench
