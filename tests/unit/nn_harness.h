#pragma once
// Shared by the tests/unit/test_nn_*.cpp module tests: an in-memory weight store filled with
// random tensors (f32, f16 or q8_0), a one-input graph runner, and naive double-precision helpers.

#include "core/backend.h"
#include "core/graph.h"
#include "modules/module_weights.h"
#include "core/weight_store.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace chatterbox::test {

class NnHarness {
  public:
    explicit NnHarness(const BackendOptions &options = BackendOptions{"cpu", 2}) : backend_(options) {}

    Backend &backend() { return backend_; }
    WeightStore &store() { return store_; }

    // Adds a random tensor in [lo, hi) stored as `type`; returns its values as stored (after
    // f16 rounding or q8_0 quantisation), the values a reference must use.
    std::vector<float> add(const std::string &name, const Shape &shape, ggml_type type = GGML_TYPE_F32,
                           float lo = -1.0f, float hi = 1.0f) {
        const std::vector<float> values = random_values(size_t(shape_numel(shape)), next_seed_++, lo, hi);
        return add_values(name, shape, values, type);
    }

    std::vector<float> add_values(const std::string &name, const Shape &shape, const std::vector<float> &values,
                                  ggml_type type = GGML_TYPE_F32) {
        HostTensor t(name, type, shape);
        const int64_t row = shape.empty() ? 1 : shape.back();
        ggml_quantize_chunk(type, values.data(), t.bytes.data(), 0, t.numel() / row, row, nullptr);
        std::vector<float> stored = to_f32(t.view());
        store_.add_tensor(std::move(t));
        return stored;
    }

    std::vector<float> input(size_t n, float lo = -1.0f, float hi = 1.0f) {
        return random_values(n, next_seed_++, lo, hi);
    }

    // Builds out = build(ctx, x) for one f32 input of PyTorch shape `shape`, runs it, returns out.
    std::vector<float> run(const Shape &shape, const std::vector<float> &x,
                           const std::function<ggml_tensor *(ggml_context *, ggml_tensor *)> &build,
                           Shape *out_shape = nullptr) {
        GraphRunner graph(backend_);
        ggml_tensor *in = graph.input("x", GGML_TYPE_F32, shape);
        ggml_tensor *out = build(graph.ctx(), in);
        graph.build({out});
        graph.set_input(in, x);
        graph.compute();
        if (out_shape) *out_shape = torch_shape_of_4d(out);
        return graph.read_f32(out);
    }

    // The PyTorch shape of a ggml tensor with all 4 dimensions kept (leading ones included).
    static Shape torch_shape_of_4d(const ggml_tensor *t) { return {t->ne[3], t->ne[2], t->ne[1], t->ne[0]}; }

  private:
    Backend backend_;
    WeightStore store_;
    uint64_t next_seed_ = 1;
};

inline void expect_close(const std::vector<float> &actual, const std::vector<double> &expected, double tolerance,
                         const std::string &what) {
    ASSERT_EQ(actual.size(), expected.size()) << what;
    double worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < actual.size(); ++i) {
        const double err = std::fabs(double(actual[i]) - expected[i]);
        if (!(err <= worst) || std::isnan(err)) {
            worst = std::isnan(err) ? INFINITY : err;
            worst_at = i;
        }
    }
    EXPECT_LE(worst, tolerance) << what << ": worst at " << worst_at << " got " << actual[worst_at] << " expected "
                                << expected[worst_at];
}

} // namespace chatterbox::test
