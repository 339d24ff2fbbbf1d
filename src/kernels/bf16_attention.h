#pragma once
// The two products of the blocked attention's bf16 path (kernels/onednn.h, blocked_attention) in
// AVX-512 BF16 register blocks, where the CPU has it: the scores S = Q·Kᵀ of a block of queries and
// the weighted values O = P·V. oneDNN's products ran at ~60 % of the bf16 peak on these shapes (64
// dims, ~1000 keys; the attention is half of English's CFM on the Zen 5 VM): its kernels for a
// 64-deep product and for a 64-wide result read and write more than they multiply.
//
// A head's keys and values are packed once (per run of tasks on it) into vdpbf16ps's pair layout:
// keys by blocks of 16, two dimensions a lane; values by pairs of keys, 16 dimensions a register.
// A query row's scores and output come from one fixed sequence of operations over its own row,
// whatever rows share its register block: the same bits in any block, task split or thread count.

#include <cstdint>

namespace chatterbox::kernels::bf16_attention {

constexpr int64_t kKeyBlock = 16; // keys of one register of scores: the packed keys' block

// Whether this build and CPU run the products (x86-64 with AVX-512 F, BW, VL and BF16).
bool runs_here();
// Whether they take heads of this width: a multiple of 16 up to 64.
bool takes(int64_t head_dim);

// Sizes (in bf16 values) of a head's packed keys and values, and the row stride the probabilities
// need (even, past n_kv; the value past n_kv must be 0).
int64_t packed_keys_size(int64_t n_kv, int64_t head_dim);
int64_t packed_values_size(int64_t n_kv, int64_t head_dim);
int64_t probability_stride(int64_t n_kv);
// The row stride the scores need (a multiple of 16 floats, at least n_kv).
int64_t score_stride(int64_t n_kv);

// n_kv rows of head_dim f32 values, `stride` floats apart -> bf16 (nearest, ties to even) in the
// products' layouts (zeros past n_kv).
void pack_keys(const float *k, int64_t n_kv, int64_t head_dim, int64_t stride, uint16_t *out);
void pack_values(const float *v, int64_t n_kv, int64_t head_dim, int64_t stride, uint16_t *out);

// s[r][j] = Σ_d q[r][d]·k[j][d] (in f32) for `rows` bf16 query rows of head_dim (contiguous) and the
// packed keys; row r at s + r · score_stride(n_kv).
void scores(const uint16_t *q, int64_t rows, int64_t head_dim, const uint16_t *keys, int64_t n_kv, float *s);

// out[r][d] = inverse[r] · Σ_j p[r][j]·v[j][d] for `rows` bf16 probability rows (probability_stride
// apart) and the packed values; row r at out + r · out_stride.
void weighted_values(const uint16_t *p, int64_t rows, const uint16_t *values, int64_t n_kv, int64_t head_dim,
                     const float *inverse, float *out, int64_t out_stride);

} // namespace chatterbox::kernels::bf16_attention
