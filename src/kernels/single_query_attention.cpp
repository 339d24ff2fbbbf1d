#include "kernels/single_query_attention.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#include <sleef.h>
#define CHATTERBOX_F16_IN_REGISTERS 1
#endif

namespace chatterbox::kernels {

namespace {

// Sums run in this many independent lanes, then fold in a fixed order: vectorised or not, and
// however long the loop, each value meets the same partial sum.
constexpr int64_t kLanes = 16;

constexpr const char *kNode = "single_query_attention", *kChunksNode = "single_query_attention.chunks";

// Positions per chunk: a query's chunks are attended one by one, on any thread, and merged in order.
// Fixed, so that a query's bits do not depend on the cache's length, the batch or the threads.
constexpr int64_t kChunk = 64;

// How far ahead the cache is prefetched: keys 4 positions on, values a block of 8 positions on (the
// best of 2-16 positions and blocks of 4-16 in a throwaway harness, bench/history/
// 2026-12-04-prefill-parts-decode-attention-zen3.md).
constexpr int64_t kKeysAhead = 4, kValueBlock = 8;

void prefetch(const char *row, size_t bytes) {
    for (size_t i = 0; i < bytes; i += 64) __builtin_prefetch(row + i);
}

int64_t padded(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

float fold(const float *lanes) {
    float half[kLanes / 2];
    for (int64_t l = 0; l < kLanes / 2; ++l) half[l] = lanes[l] + lanes[l + kLanes / 2];
    float quarter[kLanes / 4];
    for (int64_t l = 0; l < kLanes / 4; ++l) quarter[l] = half[l] + half[l + kLanes / 4];
    return (quarter[0] + quarter[2]) + (quarter[1] + quarter[3]);
}

// A thread's growing f32 buffer, 64-byte aligned (so vectorised loops split the same way each call).
class Buffer {
  public:
    float *get(int64_t n) {
        if (n > size_) {
            const size_t bytes = (size_t(n) * sizeof(float) + 63) / 64 * 64;
            data_.reset(static_cast<float *>(std::aligned_alloc(64, bytes)));
            if (!data_) throw std::bad_alloc();
            size_ = n;
        }
        return data_.get();
    }

  private:
    struct Free {
        void operator()(float *p) const { std::free(p); }
    };
    std::unique_ptr<float, Free> data_;
    int64_t size_ = 0;
};

struct Scratch {
    Buffer mask, scores, query, row;
};

// A q8_0 row: blocks of 32 values, each an f16 scale then 32 int8; a value is scale · int8, exact in f32
// (11 + 8 significant bits), as ggml dequantises it.
constexpr int64_t kQ8Block = 32;
constexpr size_t kQ8BlockBytes = sizeof(ggml_fp16_t) + kQ8Block;

// n values of a cached row (f32, f16 or q8_0) as f32 in `to`; returns the f32 values (`to`, or the row itself).
const float *as_f32(const ggml_tensor *t, const char *row, int64_t n, float *to) {
    if (t->type == GGML_TYPE_F32) return reinterpret_cast<const float *>(row);
    if (t->type == GGML_TYPE_Q8_0) {
        ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float(row, to, n);
        return to;
    }
    const auto *half = reinterpret_cast<const ggml_fp16_t *>(row);
    for (int64_t i = 0; i < n; ++i) to[i] = ggml_fp16_to_fp32(half[i]);
    return to;
}

float dot(const float *a, const float *b, int64_t n) {
    float lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int64_t l = 0; l < kLanes; ++l) lanes[l] = std::fma(a[i + l], b[i + l], lanes[l]);
    for (int64_t l = 0; i + l < n; ++l) lanes[l] = std::fma(a[i + l], b[i + l], lanes[l]);
    return fold(lanes);
}

#ifdef CHATTERBOX_F16_IN_REGISTERS
// The Chunks × 8 f16 values from `row` on as f32, in registers.
template <int Chunks> void f16_values(const char *row, __m256 *out) {
    const auto *half = reinterpret_cast<const __m128i *>(row);
    for (int c = 0; c < Chunks; ++c) out[c] = _mm256_cvtph_ps(_mm_loadu_si128(half + c));
}

// A q8_0 block's 32 values (from `block` on) as f32, in four registers: scale · int8, the values
// as_f32 gives (the scale converted once for the block).
void q8_block_values(const char *block, __m256 *out) {
    uint16_t scale_bits;
    std::memcpy(&scale_bits, block, sizeof scale_bits);
    const __m256 scale = _mm256_set1_ps(_cvtsh_ss(scale_bits));
    for (int c = 0; c < 4; ++c) {
        const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(block + sizeof scale_bits + 8 * c));
        out[c] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), scale);
    }
}

// dot()'s 16 lanes for a key over its first d / 16 * 16 values: lanes 0-7 and 8-15.
struct DotLanes {
    __m256 low, high;
};

// DotLanes for a key whose values `load` converts Chunks × 8 at a time from each StepBytes of the row
// (Chunks even), the chunks taking lanes 0-7 and 8-15 in turn, so every type meets the same steps.
template <int Chunks, size_t StepBytes, void (*load)(const char *, __m256 *)>
DotLanes dot_lanes(const char *key, const float *query, int64_t d) {
    DotLanes lanes{_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i + 8 * Chunks <= d; i += 8 * Chunks, key += StepBytes) {
        __m256 values[Chunks];
        load(key, values);
        for (int c = 0; c < Chunks; c += 2) {
            lanes.low = _mm256_fmadd_ps(_mm256_loadu_ps(query + i + 8 * c), values[c], lanes.low);
            lanes.high = _mm256_fmadd_ps(_mm256_loadu_ps(query + i + 8 * c + 8), values[c + 1], lanes.high);
        }
    }
    return lanes;
}
constexpr auto f16_dot_lanes = dot_lanes<2, 2 * sizeof(__m128i), f16_values<2>>;
constexpr auto q8_dot_lanes = dot_lanes<4, kQ8BlockBytes, q8_block_values>; // d a multiple of 32
using LanesOf = DotLanes (*)(const char *key, const float *query, int64_t d);
#endif

// The query's dot with a cached key; an f16 or q8_0 key is converted in registers (the same 16 lanes
// and fused steps as dot()), not through `buffer`: a round trip of each converted row through L1 had
// cost 10-20 % of this kernel's time (bench/history/2026-12-03-q4k-avx2-zen3.md).
float key_dot(const ggml_tensor *k, const char *key, const float *query, int64_t d, float *buffer) {
#ifdef CHATTERBOX_F16_IN_REGISTERS
    if (k->type == GGML_TYPE_F16 || k->type == GGML_TYPE_Q8_0) {
        const DotLanes sums = (k->type == GGML_TYPE_F16 ? f16_dot_lanes : q8_dot_lanes)(key, query, d);
        alignas(32) float lanes[kLanes];
        _mm256_store_ps(lanes, sums.low);
        _mm256_store_ps(lanes + 8, sums.high);
        // An f16 key's values past the last 16; a q8_0 key's d is a multiple of 32, with none.
        const auto *rest = reinterpret_cast<const ggml_fp16_t *>(key);
        for (int64_t i = d / kLanes * kLanes, l = 0; k->type == GGML_TYPE_F16 && i + l < d; ++l)
            lanes[l] = std::fma(query[i + l], ggml_fp16_to_fp32(rest[i + l]), lanes[l]);
        return fold(lanes);
    }
#endif
    return dot(query, as_f32(k, key, d, buffer), d);
}

#ifdef CHATTERBOX_F16_IN_REGISTERS
// key_dot for 8 heads at once (each its own query and f16 or q8_0 key, d a multiple of 16), written
// to scores[h * stride] as fma(dot, scale, bias). The 8 folds run side by side: the same additions in
// the same order as fold(), so each score has key_dot's bits.
template <LanesOf lanes_of>
void eight_scores(const char *const *keys, const float *query, int64_t d, float scale, float bias, float *scores,
                  int64_t stride) {
    __m256 halves[8]; // fold's half[l] = lanes[l] + lanes[l + 8], one head each
    for (int head = 0; head < 8; ++head) {
        const DotLanes lanes = lanes_of(keys[head], query + head * d, d);
        halves[head] = _mm256_add_ps(lanes.low, lanes.high);
    }
    // quarter[l] = half[l] + half[l + 4]: heads 2p and 2p + 1 in the low and high 128 bits.
    __m256 quarters[4];
    for (int p = 0; p < 4; ++p)
        quarters[p] = _mm256_add_ps(_mm256_permute2f128_ps(halves[2 * p], halves[2 * p + 1], 0x20),
                                    _mm256_permute2f128_ps(halves[2 * p], halves[2 * p + 1], 0x31));
    // (quarter[0] + quarter[2]) and (quarter[1] + quarter[3]), then their sum: heads 0, 2, 4, 6 low, 1, 3, 5, 7 high.
    auto pairs = [](__m256 a, __m256 b) {
        return _mm256_add_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
    };
    const __m256 dots =
        _mm256_permutevar8x32_ps(_mm256_hadd_ps(pairs(quarters[0], quarters[1]), pairs(quarters[2], quarters[3])),
                                 _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    alignas(32) float out[8];
    _mm256_store_ps(out, _mm256_fmadd_ps(dots, _mm256_set1_ps(scale), _mm256_set1_ps(bias)));
    for (int head = 0; head < 8; ++head) scores[head * stride] = out[head];
}

// o[0, 8 * Chunks) += w[j] · values(j) over positions [j0, j1), the sums held in registers; `load`
// converts the Chunks × 8 values that start at `values` in a position's row.
template <int Chunks, void (*load)(const char *, __m256 *)>
void add_weighted_in_registers(const char *values, size_t position_bytes, const float *w, int64_t j0, int64_t j1,
                               float *o) {
    __m256 sums[Chunks];
    for (int c = 0; c < Chunks; ++c) sums[c] = _mm256_loadu_ps(o + 8 * c);
    for (int64_t j = j0; j < j1; ++j) {
        if (w[j] == 0.0f) continue;
        const __m256 weight = _mm256_set1_ps(w[j]);
        __m256 row[Chunks];
        load(values + j * position_bytes, row);
        for (int c = 0; c < Chunks; ++c) sums[c] = _mm256_fmadd_ps(weight, row[c], sums[c]);
    }
    for (int c = 0; c < Chunks; ++c) _mm256_storeu_ps(o + 8 * c, sums[c]);
}
#endif

// o += w[j] · (the head's cached value at j) over positions [j0, j1) in position order, skipping zero
// weights (f16 and q8_0 values converted in registers, as key_dot). The sums stay in registers over
// the positions rather than going through memory at each one.
void add_weighted(const ggml_tensor *v, const char *head, const float *w, int64_t j0, int64_t j1, int64_t d, float *o,
                  float *buffer) {
    int64_t i0 = 0;
#ifdef CHATTERBOX_F16_IN_REGISTERS
    if (v->type == GGML_TYPE_F16) {
        for (; i0 + 32 <= d; i0 += 32)
            add_weighted_in_registers<4, f16_values<4>>(head + i0 * 2, v->nb[2], w, j0, j1, o + i0);
        for (; i0 + 8 <= d; i0 += 8)
            add_weighted_in_registers<1, f16_values<1>>(head + i0 * 2, v->nb[2], w, j0, j1, o + i0);
    } else if (v->type == GGML_TYPE_Q8_0) { // d is a multiple of 32: a block at a time
        for (; i0 < d; i0 += kQ8Block)
            add_weighted_in_registers<4, q8_block_values>(head + i0 / kQ8Block * kQ8BlockBytes, v->nb[2], w, j0, j1,
                                                          o + i0);
    }
#endif
    if (i0 == d) return;
    for (int64_t j = j0; j < j1; ++j) {
        if (w[j] == 0.0f) continue;
        const float *row = as_f32(v, head + j * v->nb[2], d, buffer);
        for (int64_t i = i0; i < d; ++i) o[i] = std::fma(w[j], row[i], o[i]);
    }
}

float largest(const float *p, int64_t n) {
    float top = -std::numeric_limits<float>::infinity();
    int64_t j = 0;
#ifdef CHATTERBOX_F16_IN_REGISTERS
    __m256 tops = _mm256_set1_ps(top);
    for (; j + 8 <= n; j += 8) tops = _mm256_max_ps(tops, _mm256_loadu_ps(p + j));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, tops);
    for (const float lane : lanes) top = std::max(top, lane);
#endif
    for (; j < n; ++j) top = std::max(top, p[j]);
    return top;
}

// p[j] = exp(p[j] - top) for j < n (a multiple of 16). SLEEF's vector exp (1 ulp) in place of the C
// library's, which had been a sixth of this kernel's time.
void exp_of_difference(float *p, int64_t n, float top) {
#ifdef CHATTERBOX_F16_IN_REGISTERS
    for (int64_t j = 0; j < n; j += 8)
        _mm256_storeu_ps(p + j, Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(p + j), _mm256_set1_ps(top))));
#else
    for (int64_t j = 0; j < n; ++j) p[j] = std::exp(p[j] - top);
#endif
}

float mask_value(const ggml_tensor *mask, const char *row, int64_t j) {
    if (mask->type == GGML_TYPE_F16) return ggml_fp16_to_fp32(reinterpret_cast<const ggml_fp16_t *>(row)[j]);
    return reinterpret_cast<const float *>(row)[j];
}

// Positions [p0, p0 + kChunk) of query iq of sequence b (clipped to the cache), every head: a head's
// weighted values relative to its largest score in the chunk (not yet divided by their weights'
// sum), that score and the sum, at part + h * (d + 2). A chunk the query sees none of has sum 0,
// and its values and score are left unwritten.
void attend_chunk(const ggml_tensor *node, int64_t b, int64_t iq, int64_t p0, float scale, Scratch &s, float *part) {
    const ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *mask = node->src[3];
    const int64_t d = q->ne[0], heads = q->ne[1], group = q->ne[1] / k->ne[1];
    const int64_t length = std::min(kChunk, k->ne[2] - p0);
    constexpr float kBlocked = -std::numeric_limits<float>::infinity();

    // The positions this query sees: [0, visible) of the chunk, some of them possibly masked.
    float *bias = s.mask.get(length);
    int64_t visible = 0;
    const char *mask_row =
        mask ? static_cast<const char *>(mask->data) + iq * mask->nb[1] + (mask->ne[3] == 1 ? 0 : b * mask->nb[3])
             : nullptr;
    for (int64_t j = 0; j < length; ++j) {
        bias[j] = mask_row ? mask_value(mask, mask_row, p0 + j) : 0.0f;
        if (bias[j] != kBlocked) visible = j + 1;
    }
    if (visible == 0) { // the merge reads nothing else of such a chunk (a prefill's later ones)
        for (int64_t h = 0; h < heads; ++h) part[h * (d + 2) + d + 1] = 0.0f;
        return;
    }
    const int64_t stride = padded(visible);

    float *query = s.query.get(heads * d);
    for (int64_t h = 0; h < heads; ++h)
        std::memcpy(query + h * d, static_cast<const char *>(q->data) + h * q->nb[1] + iq * q->nb[2] + b * q->nb[3],
                    size_t(d) * sizeof(float));
    // Each head's cached rows at the chunk's first position (a group of query heads shares one
    // key/value head).
    const char *key_rows[256], *value_rows[256];
    for (int64_t h = 0; h < heads; ++h) {
        key_rows[h] = static_cast<const char *>(k->data) + h / group * k->nb[1] + p0 * k->nb[2] + b * k->nb[3];
        value_rows[h] = static_cast<const char *>(v->data) + h / group * v->nb[1] + p0 * v->nb[2] + b * v->nb[3];
    }

    // Scores, position by position (the keys of all the heads at j are adjacent), the keys kKeysAhead
    // positions on asked for in advance.
    const size_t key_bytes = ggml_row_size(k->type, d), value_bytes = ggml_row_size(v->type, d);
    float *scores = s.scores.get(heads * stride);
    float *row = s.row.get(d);
#ifdef CHATTERBOX_F16_IN_REGISTERS
    // Eight heads at a time for the key types converted in registers (d a multiple of 16).
    const auto eight = d % kLanes != 0             ? nullptr
                       : k->type == GGML_TYPE_F16  ? eight_scores<f16_dot_lanes>
                       : k->type == GGML_TYPE_Q8_0 ? eight_scores<q8_dot_lanes>
                                                   : nullptr;
#endif
    for (int64_t j = 0; j < stride; ++j) {
        if (j >= visible || bias[j] == kBlocked) {
            for (int64_t h = 0; h < heads; ++h) scores[h * stride + j] = kBlocked;
            continue;
        }
        if (j + kKeysAhead < visible)
            for (int64_t h = 0; h < heads; ++h) prefetch(key_rows[h] + (j + kKeysAhead) * k->nb[2], key_bytes);
        int64_t h = 0;
#ifdef CHATTERBOX_F16_IN_REGISTERS
        if (eight)
            for (; h + 8 <= heads; h += 8) {
                const char *keys[8];
                for (int64_t i = 0; i < 8; ++i) keys[i] = key_rows[h + i] + j * k->nb[2];
                eight(keys, query + h * d, d, scale, bias[j], scores + h * stride + j, stride);
            }
#endif
        for (; h < heads; ++h)
            scores[h * stride + j] =
                std::fma(key_dot(k, key_rows[h] + j * k->nb[2], query + h * d, d, row), scale, bias[j]);
    }

    // Softmax weights relative to the chunk's largest score, and their sums.
    for (int64_t h = 0; h < heads; ++h) {
        float *p = scores + h * stride;
        const float top = largest(p, visible);
        exp_of_difference(p, stride, top); // blocked: exp(-inf) = 0
        float lanes[kLanes] = {};
        for (int64_t j = 0; j < stride; j += kLanes)
            for (int64_t l = 0; l < kLanes; ++l) lanes[l] += p[j + l];
        part[h * (d + 2) + d] = top;
        part[h * (d + 2) + d + 1] = fold(lanes);
        std::fill_n(part + h * (d + 2), d, 0.0f);
    }

    // Weighted values, a block of positions at a time (16 KB of f16 values at 16 heads of 64, in L1
    // for all the heads), the next block asked for in advance; a zero weight adds nothing and is skipped.
    for (int64_t j0 = 0; j0 < visible; j0 += kValueBlock)
        for (int64_t h = 0; h < heads; ++h) {
            for (int64_t j = j0 + kValueBlock; j < std::min(visible, j0 + 2 * kValueBlock); ++j)
                prefetch(value_rows[h] + j * v->nb[2], value_bytes);
            add_weighted(v, value_rows[h], scores + h * stride, j0, std::min(visible, j0 + kValueBlock), d,
                         part + h * (d + 2), row);
        }
}

int64_t chunks_of(int64_t n_kv) { return (n_kv + kChunk - 1) / kChunk; }

// The chunks' parts: ggml [(D + 2) * H, chunks, n_q, B]. Chunks go to the threads in turn.
void chunks_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    float scale;
    const auto bits = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(userdata));
    std::memcpy(&scale, &bits, sizeof scale);
    const int64_t chunks = dst->ne[1], n_q = dst->ne[2], items = chunks * n_q * dst->ne[3];
    thread_local Scratch scratch;
    for (int64_t item = ith; item < items; item += nth) {
        const int64_t c = item % chunks, iq = item / chunks % n_q, b = item / chunks / n_q;
        attend_chunk(dst, b, iq, c * kChunk, scale, scratch,
                     reinterpret_cast<float *>(static_cast<char *>(dst->data) + c * dst->nb[1] + iq * dst->nb[2] +
                                               b * dst->nb[3]));
    }
}

// A (query, head)'s chunks merged in chunk order: each chunk's values and sum scaled by exp(its
// largest score - the largest of all), then divided by the total sum. One chunk: the single pass's bits.
void merge_op(ggml_tensor *dst, int ith, int nth, void *) {
    const ggml_tensor *parts = dst->src[0];
    const int64_t heads = (parts->ne[0] - dst->ne[0]) / 2, d = dst->ne[0] / heads, chunks = parts->ne[1];
    const int64_t n_q = parts->ne[2], items = heads * n_q * parts->ne[3];
    for (int64_t item = ith; item < items; item += nth) {
        const int64_t h = item % heads, iq = item / heads % n_q, b = item / heads / n_q;
        const char *first = static_cast<const char *>(parts->data) + iq * parts->nb[2] + b * parts->nb[3];
        const auto part = [&](int64_t c) {
            return reinterpret_cast<const float *>(first + c * parts->nb[1]) + h * (d + 2);
        };
        float top = -std::numeric_limits<float>::infinity();
        for (int64_t c = 0; c < chunks; ++c)
            if (part(c)[d + 1] > 0.0f) top = std::max(top, part(c)[d]);
        float *o = reinterpret_cast<float *>(static_cast<char *>(dst->data) + iq * dst->nb[1] + b * dst->nb[2]) + h * d;
        std::fill_n(o, d, 0.0f);
        float total = 0.0f;
        for (int64_t c = 0; c < chunks; ++c) {
            const float *values = part(c);
            if (values[d + 1] == 0.0f) continue;
            const float factor = std::exp(values[d] - top);
            total = std::fma(values[d + 1], factor, total);
            for (int64_t i = 0; i < d; ++i) o[i] = std::fma(values[i], factor, o[i]);
        }
        const float inverse = total > 0.0f ? 1.0f / total : 0.0f; // nothing visible: zeros, not NaN
        for (int64_t i = 0; i < d; ++i) o[i] *= inverse;
    }
}

} // namespace

ggml_tensor *single_query_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v,
                                    ggml_tensor *mask, float scale) {
    const int64_t d = q->ne[0], n_heads = q->ne[1], n_q = q->ne[2], batch = q->ne[3], n_kv = k->ne[2];
    const bool cached_type =
        (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16 || (k->type == GGML_TYPE_Q8_0 && d % kQ8Block == 0)) &&
        v->type == k->type;
    if (q->type != GGML_TYPE_F32 || q->nb[0] != sizeof(float) || !cached_type || k->nb[0] != ggml_type_size(k->type) ||
        v->nb[0] != ggml_type_size(v->type) || k->ne[0] != d || v->ne[0] != d || v->ne[1] != k->ne[1] ||
        n_heads % k->ne[1] != 0 || v->ne[2] != n_kv || k->ne[3] != batch || v->ne[3] != batch || n_heads > 256)
        fail("single-query attention: expected q f32 [D, H, n_q, B] and k, v f32, f16 or q8_0 (D a multiple of "
             "32) [D, H_kv, n_kv, B] with contiguous rows, H a multiple of H_kv and at most 256 heads");
    if (mask &&
        ((mask->type != GGML_TYPE_F32 && mask->type != GGML_TYPE_F16) || mask->ne[0] != n_kv || mask->ne[1] != n_q ||
         mask->ne[2] != 1 || (mask->ne[3] != 1 && mask->ne[3] != batch) || !ggml_is_contiguous_rows(mask)))
        fail("single-query attention: the mask must be f32 or f16 [n_kv = ", n_kv, ", n_q = ", n_q, ", 1, 1 or B]");
    uint32_t bits;
    std::memcpy(&bits, &scale, sizeof bits);
    ggml_tensor *args[] = {q, k, v, mask};
    ggml_tensor *parts =
        ggml_custom_4d(ctx, GGML_TYPE_F32, (d + 2) * n_heads, chunks_of(n_kv), n_q, batch, args, mask ? 4 : 3,
                       chunks_op, GGML_N_TASKS_MAX, reinterpret_cast<void *>(static_cast<uintptr_t>(bits)));
    ggml_set_name(parts, kChunksNode);
    ggml_tensor *out =
        ggml_custom_4d(ctx, GGML_TYPE_F32, d * n_heads, n_q, batch, 1, &parts, 1, merge_op, GGML_N_TASKS_MAX, nullptr);
    return ggml_set_name(out, kNode);
}

} // namespace chatterbox::kernels
