#include "models/chatterbox/hparam_fields.h"

#include "core/weight_store.h"

namespace chatterbox {

std::optional<int64_t> CheckpointShapes::dimension(const std::string &name, size_t rank, size_t axis) const {
    const TensorView *t = store_.find(prefix_ + name);
    if (!t) return std::nullopt;
    if (t->shape.size() != rank)
        fail("tensor ", prefix_, name, " is ", shape_str(t->shape), "; expected ", rank, " dimensions");
    return t->shape[axis];
}

int64_t CheckpointShapes::count_indexed(const std::string &before, const std::string &after) const {
    int64_t n = 0;
    while (store_.find(prefix_ + before + std::to_string(n) + after)) ++n;
    return n;
}

} // namespace chatterbox
