#pragma once
// Internal to kernels/conv1d_direct.cpp: the register-blocked loops of each instruction set (each
// built alone with its flags: conv1d_direct_avx512.cpp, conv1d_direct_avx2.cpp; called only on a CPU
// that has it). They use nothing with external linkage but this header's plain struct, so no copy
// of shared inline code compiled for AVX-512 can reach a caller on another CPU.

#include <cstdint>

namespace chatterbox::kernels::conv1d {

// The convolution's kernel and output (its input is handed over tile by tile).
struct Problem {
    const float *kernel; // [C_out][C_in][K]
    const float *bias;   // [C_out] or nullptr
    float *y;            // [B][C_out][t_out]
    int64_t t_out, in, out, taps, dilation;
};

// Outputs [t_begin, t_end) of batch item b, every channel (t_end - t_begin <= tile_samples): x points
// at the input of output t_begin's first tap in channel 0, the channels x_stride apart, every input
// the tile reads present (zero padding included).
using TileFunction = void (*)(const Problem &p, const float *x, int64_t x_stride, int64_t b, int64_t t_begin,
                              int64_t t_end);

struct Isa {
    int64_t tile_samples; // outputs of one tile (the set's vectors per block)
    TileFunction tile;
};
const Isa &avx512_isa();
const Isa &avx2_isa();

} // namespace chatterbox::kernels::conv1d
