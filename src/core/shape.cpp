#include "core/shape.h"

#include "core/error.h"

namespace chatterbox {

std::array<int64_t, GGML_MAX_DIMS> ggml_ne_from_torch(const Shape &torch_shape) {
    if (torch_shape.size() > GGML_MAX_DIMS)
        fail("shape ", shape_str(torch_shape), " has more than ", GGML_MAX_DIMS, " dimensions");
    std::array<int64_t, GGML_MAX_DIMS> ne{1, 1, 1, 1};
    for (size_t i = 0; i < torch_shape.size(); ++i) ne[i] = torch_shape[torch_shape.size() - 1 - i];
    return ne;
}

Shape torch_shape_of(const ggml_tensor *t) {
    int dims = ggml_n_dims(t);
    Shape s(static_cast<size_t>(dims));
    for (int i = 0; i < dims; ++i) s[size_t(i)] = t->ne[dims - 1 - i];
    return s;
}

ggml_tensor *new_tensor_torch(ggml_context *ctx, ggml_type type, const Shape &torch_shape) {
    auto ne = ggml_ne_from_torch(torch_shape);
    return ggml_new_tensor(ctx, type, torch_shape.empty() ? 1 : int(torch_shape.size()), ne.data());
}

bool same_shape(const ggml_tensor *t, const Shape &torch_shape) {
    auto ne = ggml_ne_from_torch(torch_shape);
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        if (t->ne[i] != ne[size_t(i)]) return false;
    return true;
}

} // namespace chatterbox
