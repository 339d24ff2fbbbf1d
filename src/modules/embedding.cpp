#include "modules/embedding.h"

#include "core/error.h"

namespace chatterbox::nn {

Embedding::Embedding(ModuleWeights &w, const std::string &prefix, int64_t count_, int64_t dim_)
    : count(count_), dim(dim_) {
    if (count <= 0 || dim <= 0) fail("Embedding ", prefix, ": bad size ", count, " x ", dim);
    weight = w.get(prefix + ".weight", {count, dim}, WeightUse::as_stored); // rows read by ggml_get_rows
}

ggml_tensor *Embedding::operator()(ggml_context *ctx, ggml_tensor *ids) const {
    if (!weight) fail("Embedding used before it was bound");
    if (ids->type != GGML_TYPE_I32 || ids->ne[2] != 1 || ids->ne[3] != 1)
        fail("Embedding ", ggml_get_name(weight), ": ids must be I32 [T] or [T, B], got ", ggml_type_name(ids->type),
             " with ", ggml_n_dims(ids), " dimensions");
    const int64_t n = ids->ne[0], batch = ids->ne[1];
    ggml_tensor *flat = ids;
    if (batch > 1) flat = ggml_reshape_1d(ctx, ggml_is_contiguous(ids) ? ids : ggml_cont(ctx, ids), n * batch);
    ggml_tensor *rows = ggml_get_rows(ctx, weight, flat);
    return batch == 1 ? rows : ggml_reshape_3d(ctx, rows, dim, n, batch);
}

void Embedding::check_ids(const std::vector<int32_t> &ids) const {
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= count)
            fail("Embedding ", weight ? ggml_get_name(weight) : "?", ": id ", ids[i], " at position ", i,
                 " is outside [0, ", count, ")");
}

} // namespace chatterbox::nn
