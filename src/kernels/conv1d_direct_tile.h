#pragma once
// Internal to the conv1d_direct_<isa>.cpp files: the register-blocked tile loop over a vector type V
// (one instruction set), included by each file under its own flags. Everything here has internal
// linkage (an anonymous namespace, no library calls), so each file keeps its own copy.
//
// A block is `Rows` output channels × `Vectors` vectors of outputs, all in registers; for every
// input channel i and tap k it loads the inputs x[t + dilation·k, i] once and multiplies them by one
// broadcast kernel value per row. The last vector of a tile that ends inside one is masked (no load
// or store past the tile's outputs).

#include "kernels/conv1d_direct.h"

namespace chatterbox::kernels::conv1d {
namespace {

template <class V, int Rows, int Vectors, bool Masked>
void block(const Problem &p, const float *x, int64_t x_stride, int64_t b, int64_t o, int64_t t0,
           typename V::Mask tail) {
    typename V::Reg acc[Rows][Vectors];
    for (int r = 0; r < Rows; ++r)
        for (int j = 0; j < Vectors; ++j) acc[r][j] = V::zero();
    const float *w = p.kernel + o * p.in * p.taps;
    const int64_t row_stride = p.in * p.taps;
    for (int64_t i = 0; i < p.in; ++i, x += x_stride, w += p.taps) {
        for (int64_t k = 0; k < p.taps; ++k) {
            const float *xs = x + k * p.dilation;
            typename V::Reg xv[Vectors];
            for (int j = 0; j < Vectors; ++j)
                xv[j] =
                    Masked && j == Vectors - 1 ? V::load_masked(xs + j * V::kLanes, tail) : V::load(xs + j * V::kLanes);
            for (int r = 0; r < Rows; ++r) {
                const typename V::Reg wv = V::broadcast(w + r * row_stride + k);
                for (int j = 0; j < Vectors; ++j) acc[r][j] = V::fma(wv, xv[j], acc[r][j]);
            }
        }
    }
    for (int r = 0; r < Rows; ++r) {
        float *y = p.y + (b * p.out + o + r) * p.t_out + t0;
        const typename V::Reg bias = p.bias ? V::broadcast(p.bias + o + r) : V::zero();
        for (int j = 0; j < Vectors; ++j) {
            const typename V::Reg v = p.bias ? V::add(acc[r][j], bias) : acc[r][j];
            if (Masked && j == Vectors - 1)
                V::store_masked(y + j * V::kLanes, v, tail);
            else
                V::store(y + j * V::kLanes, v);
        }
    }
}

// Every output channel of one tile: blocks of V::kRows channels, then single ones.
template <class V, int Vectors, bool Masked>
void channels(const Problem &p, const float *x, int64_t x_stride, int64_t b, int64_t t0, typename V::Mask tail) {
    int64_t o = 0;
    for (; o + V::kRows <= p.out; o += V::kRows) block<V, V::kRows, Vectors, Masked>(p, x, x_stride, b, o, t0, tail);
    for (; o < p.out; ++o) block<V, 1, Vectors, Masked>(p, x, x_stride, b, o, t0, tail);
}

// The block shape of `vectors` (1 .. V::kVectors) vectors of outputs, masked or not.
template <class V, int Vectors>
void channels_of_width(int64_t vectors, bool masked, const Problem &p, const float *x, int64_t x_stride, int64_t b,
                       int64_t t0, typename V::Mask tail) {
    if (vectors == Vectors)
        return masked ? channels<V, Vectors, true>(p, x, x_stride, b, t0, tail)
                      : channels<V, Vectors, false>(p, x, x_stride, b, t0, tail);
    if constexpr (Vectors > 1) channels_of_width<V, Vectors - 1>(vectors, masked, p, x, x_stride, b, t0, tail);
}

template <class V>
void tile(const Problem &p, const float *x, int64_t x_stride, int64_t b, int64_t t_begin, int64_t t_end) {
    const int64_t count = t_end - t_begin, vectors = (count + V::kLanes - 1) / V::kLanes;
    const int64_t partial = count % V::kLanes;
    channels_of_width<V, V::kVectors>(vectors, partial != 0, p, x, x_stride, b, t_begin, V::tail_mask(partial));
}

} // namespace
} // namespace chatterbox::kernels::conv1d
