#pragma once
// HiFT over a batch of mels of different lengths, each padded with zeros to the longest. HiFT is
// all convolutions and element-wise activations that keep 0 at 0 (Snake, ELU, leaky ReLU), so a
// request's samples come out as they do alone if every convolution reads zeros past the request's
// end, as its own zero padding would give: each convolution's output (its bias included) is
// multiplied by the request's mask, ones over its own samples and zeros after.

#include "ggml.h"

namespace chatterbox::hift {

// x * mask, mask ggml [L, 1, B] broadcast over the channels of x ggml [L, C, B]; x itself when
// mask is nullptr (every request of the batch has the longest length).
inline ggml_tensor *mask_padding(ggml_context *ctx, ggml_tensor *x, ggml_tensor *mask) {
    return mask ? ggml_mul(ctx, x, mask) : x;
}

} // namespace chatterbox::hift
