#pragma once
// Internal to kernels/int8_tiles: what the driver (int8_tiles.cpp) and the register-blocked passes of
// each weight format and instruction set (q4k_*_kernels.cpp, q8_0_*_kernels.cpp, each built alone with
// its flags and called only on a CPU that has them) share. Plain constants and types only: an inline
// function here would also be compiled with AVX-512 in those files, and the linker may keep that copy
// for every caller.

#include <cstddef>
#include <cstdint>

namespace chatterbox::kernels::int8_tiles {

constexpr int64_t kBlock = 256;        // values of a tile's block (a q4_K block; eight q8_0 blocks)
constexpr int64_t kColumns = 16;       // weight columns interleaved in a tile (one zmm of int32 lanes)
constexpr int64_t kMaxRowsPerPass = 8; // activation rows that share each unpacked weight register
constexpr int64_t kRowsPerUnit = 64;   // rows of one work unit (a thread's share of a wide product)

// Block b of G tiles (tiles[g], the format's layout) times rows[0 .. R) of activations quantised by
// the format (k values each), added to totals[g] (R rows × 16 columns of f32, 64-byte aligned). Each
// format's passes give the same bits on either instruction set.
using Pass = void (*)(const uint8_t *const *tiles, int64_t b, const uint8_t *const *rows, int64_t k,
                      float *const *totals);

struct Kernels {
    int64_t rows_per_pass;           // at most kMaxRowsPerPass
    Pass passes[2][kMaxRowsPerPass]; // [G - 1][R - 1]
};

} // namespace chatterbox::kernels::int8_tiles
