#pragma once
// The one place where PyTorch dimension order meets ggml's: ggml's ne[0] is the fastest
// (last PyTorch) dimension, so a PyTorch shape (a, b, c) is ggml ne = {c, b, a, 1}.

#include "core/tensor.h"

#include <array>

namespace chatterbox {

constexpr int kMaxDims = GGML_MAX_DIMS;

std::array<int64_t, GGML_MAX_DIMS> ggml_ne_from_torch(const Shape &torch_shape); // throws for > 4 dims
Shape torch_shape_of(const ggml_tensor *t);                                        // trailing 1s dropped
// A new tensor in ctx with this PyTorch shape.
ggml_tensor *new_tensor_torch(ggml_context *ctx, ggml_type type, const Shape &torch_shape);
// True when the tensor's (ggml) shape equals the PyTorch shape, ignoring leading/trailing ones.
bool same_shape(const ggml_tensor *t, const Shape &torch_shape);

} // namespace chatterbox
