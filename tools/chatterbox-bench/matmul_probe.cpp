#include "matmul_probe.h"

#include "core/error.h"
#include "core/graph.h"
#include "timing.h"

#include <algorithm>
#include <random>

namespace chatterbox::bench {

std::vector<MatmulRate> measure_matmul_rates(Backend &backend, const std::vector<ggml_type> &weight_types, int64_t k,
                                             int64_t m, int64_t n, int repeats) {
    if (k <= 0 || m <= 0 || n <= 0 || repeats < 1)
        fail("matmul probe: bad request (k ", k, ", m ", m, ", n ", n, ", ", repeats, " repeats)");
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::vector<float> weight_values(size_t(k * m)), activations(size_t(k * n));
    for (float &v : weight_values) v = unit(rng);
    for (float &v : activations) v = unit(rng);

    std::vector<MatmulRate> rates;
    for (ggml_type type : weight_types) {
        if (k % ggml_blck_size(type) != 0)
            fail("matmul probe: k = ", k, " is not a whole number of ", ggml_type_name(type), " blocks");
        GraphRunner graph(backend);
        ggml_tensor *weight = graph.input("probe.weight", type, {m, k});
        ggml_tensor *input = graph.input("probe.input", GGML_TYPE_F32, {n, k});
        graph.build({ggml_mul_mat(graph.ctx(), weight, input)});
        std::vector<uint8_t> encoded(ggml_row_size(type, k) * size_t(m));
        ggml_quantize_init(type);
        ggml_quantize_chunk(type, weight_values.data(), encoded.data(), 0, m, k, nullptr);
        graph.set_input(weight, encoded.data(), encoded.size());
        graph.set_input(input, activations);
        double best_ms = 0;
        for (int r = 0; r <= repeats; ++r) { // the first run warms caches and threads, untimed
            const auto start = Clock::now();
            graph.compute();
            const double ms = ms_since(start);
            if (r > 0) best_ms = r == 1 ? ms : std::min(best_ms, ms);
        }
        rates.push_back(MatmulRate{type, k, m, n, 2.0 * double(k) * double(m) * double(n) / (best_ms * 1e6)});
    }
    return rates;
}

} // namespace chatterbox::bench
