#pragma once
// Row `index` of a tensor, counted over its dimensions 1 to 3 as ggml_nrows counts them, wherever the
// tensor's strides put it (a strided or overlapping view): for the custom ops that walk the rows of
// their input (q4_K's quantisation, oneDNN's products, the LayerNorm kernel). Portable code only.

#include "ggml.h"

#include <cstdint>

namespace chatterbox::kernels {

inline const char *row_address(const ggml_tensor *t, int64_t index) {
    const int64_t i1 = index % t->ne[1], i2 = index / t->ne[1] % t->ne[2], i3 = index / (t->ne[1] * t->ne[2]);
    return static_cast<const char *>(t->data) + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

} // namespace chatterbox::kernels
