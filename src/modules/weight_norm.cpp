#include "modules/weight_norm.h"

#include "core/error.h"

#include <cmath>

namespace chatterbox::nn {

std::vector<float> weight_norm_values(ModuleWeights &w, const std::string &prefix, const Shape &shape, int dim) {
    if (dim < 0 || size_t(dim) >= shape.size())
        fail("weight norm of ", prefix, ": dim ", dim, " is out of range for shape ", shape_str(shape));
    const bool old_spelling = w.has(prefix + ".weight_g");
    const std::string g_name = prefix + (old_spelling ? ".weight_g" : ".parametrizations.weight.original0");
    const std::string v_name = prefix + (old_spelling ? ".weight_v" : ".parametrizations.weight.original1");

    Shape g_shape(shape.size(), 1);
    g_shape[size_t(dim)] = shape[size_t(dim)];
    const std::vector<float> g = w.host_f32(g_name, g_shape);
    const std::vector<float> v = w.host_f32(v_name, shape);

    // Index i of the row-major tensor = (outer, c, inner) with c the index along `dim`.
    const int64_t channels = shape[size_t(dim)];
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < dim; ++i) outer *= shape[size_t(i)];
    for (size_t i = size_t(dim) + 1; i < shape.size(); ++i) inner *= shape[i];

    std::vector<double> sum_sq(size_t(channels), 0.0);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t c = 0; c < channels; ++c)
            for (int64_t i = 0; i < inner; ++i) {
                const double x = v[size_t((o * channels + c) * inner + i)];
                sum_sq[size_t(c)] += x * x;
            }

    std::vector<float> out(v.size());
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t c = 0; c < channels; ++c) {
            // A zero v slice (which PyTorch would turn into NaN) folds to a zero weight.
            const double norm = std::sqrt(sum_sq[size_t(c)]);
            const double factor = norm > 0 ? double(g[size_t(c)]) / norm : 0.0;
            for (int64_t i = 0; i < inner; ++i) {
                const size_t at = size_t((o * channels + c) * inner + i);
                out[at] = float(double(v[at]) * factor);
            }
        }
    return out;
}

ggml_tensor *weight_norm(ModuleWeights &w, const std::string &prefix, const Shape &shape, int dim, WeightUse use) {
    std::vector<float> values = weight_norm_values(w, prefix, shape, dim);
    if (use != WeightUse::matmul) return w.derived(prefix + ".weight", shape, std::move(values));
    return w.derived(prefix + ".weight", {shape[0], shape_numel(shape) / shape[0]}, std::move(values), use);
}

} // namespace chatterbox::nn
