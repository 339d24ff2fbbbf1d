#include "modules/linear.h"

#include "core/error.h"
#include "modules/matmul.h"

namespace chatterbox::nn {

Linear::Linear(ModuleWeights &w, const std::string &prefix, int64_t in_, int64_t out_, bool has_bias)
    : in(in_), out(out_) {
    if (in <= 0 || out <= 0) fail("Linear ", prefix, ": bad size ", in, " -> ", out);
    weight = w.get(prefix + ".weight", {out, in}, WeightUse::matmul);
    if (has_bias) bias = w.get(prefix + ".bias", {out}, WeightUse::f32);
}

ggml_tensor *Linear::operator()(ggml_context *ctx, ggml_tensor *x) const {
    if (!weight) fail("Linear used before it was bound");
    if (x->ne[0] != in) fail("Linear ", ggml_get_name(weight), ": input has ", x->ne[0], " features, expected ", in);
    ggml_tensor *y = matmul(ctx, weight, x);
    return bias ? ggml_add(ctx, y, bias) : y;
}

} // namespace chatterbox::nn
