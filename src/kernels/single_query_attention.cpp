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
#endif

namespace chatterbox::kernels {

namespace {

// Sums run in this many independent lanes, then fold in a fixed order: vectorised or not, and
// however long the loop, each value meets the same partial sum.
constexpr int64_t kLanes = 16;

constexpr const char *kNode = "single_query_attention";

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
    Buffer mask, scores, query, row, out;
};

// n values of a cached row (f32 or f16) as f32 in `to`; returns the f32 values (`to`, or the row itself).
const float *as_f32(const ggml_tensor *t, const char *row, int64_t n, float *to) {
    if (t->type == GGML_TYPE_F32) return reinterpret_cast<const float *>(row);
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

// The query's dot with a cached key; an f16 key is converted in registers (the same 16 lanes and
// fused steps as dot()), not through `buffer`: a round trip of each converted row through L1 had
// cost 10-20 % of this kernel's time (bench/README.md, "Decode attention in registers").
float key_dot(const ggml_tensor *k, const char *key, const float *query, int64_t d, float *buffer) {
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    if (k->type == GGML_TYPE_F16) {
        const auto *half = reinterpret_cast<const __m128i *>(key);
        __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps(); // lanes 0-7, 8-15
        int64_t i = 0;
        for (; i + kLanes <= d; i += kLanes, half += 2) {
            low = _mm256_fmadd_ps(_mm256_loadu_ps(query + i), _mm256_cvtph_ps(_mm_loadu_si128(half)), low);
            high = _mm256_fmadd_ps(_mm256_loadu_ps(query + i + 8), _mm256_cvtph_ps(_mm_loadu_si128(half + 1)), high);
        }
        alignas(32) float lanes[kLanes];
        _mm256_store_ps(lanes, low);
        _mm256_store_ps(lanes + 8, high);
        const auto *rest = reinterpret_cast<const ggml_fp16_t *>(key);
        for (int64_t l = 0; i + l < d; ++l) lanes[l] = std::fma(query[i + l], ggml_fp16_to_fp32(rest[i + l]), lanes[l]);
        return fold(lanes);
    }
#endif
    return dot(query, as_f32(k, key, d, buffer), d);
}

// o += w · value for a cached value row (f16 converted in registers, as key_dot).
void add_weighted(const ggml_tensor *v, const char *value, float w, int64_t d, float *o, float *buffer) {
    int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    if (v->type == GGML_TYPE_F16) {
        const auto *half = reinterpret_cast<const ggml_fp16_t *>(value);
        const __m256 weight = _mm256_set1_ps(w);
        for (; i + 8 <= d; i += 8)
            _mm256_storeu_ps(
                o + i,
                _mm256_fmadd_ps(weight, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(half + i))),
                                _mm256_loadu_ps(o + i)));
        for (; i < d; ++i) o[i] = std::fma(w, ggml_fp16_to_fp32(half[i]), o[i]);
        return;
    }
#endif
    const float *row = as_f32(v, value, d, buffer);
    for (; i < d; ++i) o[i] = std::fma(w, row[i], o[i]);
}

float mask_value(const ggml_tensor *mask, const char *row, int64_t j) {
    if (mask->type == GGML_TYPE_F16) return ggml_fp16_to_fp32(reinterpret_cast<const ggml_fp16_t *>(row)[j]);
    return reinterpret_cast<const float *>(row)[j];
}

// Heads [h0, h1) of query iq of sequence b.
void attend(ggml_tensor *dst, int64_t b, int64_t iq, int64_t h0, int64_t h1, float scale, Scratch &s) {
    const ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
    const int64_t d = q->ne[0], n_kv = k->ne[2], group = q->ne[1] / k->ne[1], heads = h1 - h0;
    constexpr float kBlocked = -std::numeric_limits<float>::infinity();

    // The positions this query sees: [0, visible), some of them possibly masked.
    float *bias = s.mask.get(n_kv);
    int64_t visible = 0;
    const char *mask_row =
        mask ? static_cast<const char *>(mask->data) + iq * mask->nb[1] + (mask->ne[3] == 1 ? 0 : b * mask->nb[3])
             : nullptr;
    for (int64_t j = 0; j < n_kv; ++j) {
        bias[j] = mask_row ? mask_value(mask, mask_row, j) : 0.0f;
        if (bias[j] != kBlocked) visible = j + 1;
    }
    const int64_t stride = padded(visible);

    float *query = s.query.get(heads * d);
    for (int64_t h = 0; h < heads; ++h)
        std::memcpy(query + h * d,
                    static_cast<const char *>(q->data) + (h0 + h) * q->nb[1] + iq * q->nb[2] + b * q->nb[3],
                    size_t(d) * sizeof(float));
    auto cached = [&](const ggml_tensor *t, int64_t j, int64_t h) {
        return static_cast<const char *>(t->data) + (h / group) * t->nb[1] + j * t->nb[2] + b * t->nb[3];
    };

    // Scores, position by position (the keys of all the group's heads at j are adjacent).
    float *scores = s.scores.get(heads * stride);
    float *row = s.row.get(d);
    for (int64_t j = 0; j < stride; ++j)
        for (int64_t h = 0; h < heads; ++h) {
            float &score = scores[h * stride + j];
            if (j >= visible || bias[j] == kBlocked) {
                score = kBlocked;
                continue;
            }
            score = std::fma(key_dot(k, cached(k, j, h0 + h), query + h * d, d, row), scale, bias[j]);
        }

    // Softmax weights (unnormalised) and their sums.
    float *out = s.out.get(heads * d);
    for (int64_t i = 0; i < heads * d; ++i) out[i] = 0.0f;
    float sums[256];
    for (int64_t h = 0; h < heads; ++h) {
        float *p = scores + h * stride;
        float top = kBlocked;
        for (int64_t j = 0; j < visible; ++j) top = std::max(top, p[j]);
        for (int64_t j = 0; j < stride; ++j) p[j] = std::exp(p[j] - top); // blocked: exp(-inf) = 0
        float lanes[kLanes] = {};
        for (int64_t j = 0; j < stride; j += kLanes)
            for (int64_t l = 0; l < kLanes; ++l) lanes[l] += p[j + l];
        sums[h] = fold(lanes);
    }

    // Weighted values, position by position; a zero weight adds nothing and is skipped.
    for (int64_t j = 0; j < visible; ++j)
        for (int64_t h = 0; h < heads; ++h) {
            const float w = scores[h * stride + j];
            if (w == 0.0f) continue;
            add_weighted(v, cached(v, j, h0 + h), w, d, out + h * d, row);
        }

    char *dst_row = static_cast<char *>(dst->data) + iq * dst->nb[1] + b * dst->nb[2];
    for (int64_t h = 0; h < heads; ++h) {
        float *o = reinterpret_cast<float *>(dst_row) + (h0 + h) * d;
        const float inverse = sums[h] > 0.0f ? 1.0f / sums[h] : 0.0f; // nothing visible: zeros, not NaN
        for (int64_t i = 0; i < d; ++i) o[i] = out[h * d + i] * inverse;
    }
}

void single_query_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    float scale;
    const auto bits = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(userdata));
    std::memcpy(&scale, &bits, sizeof scale);
    const int64_t n_heads = dst->src[0]->ne[1], queries = dst->src[0]->ne[2] * dst->src[0]->ne[3];
    // Whole queries per thread where there are enough; otherwise their heads split in halves,
    // quarters ... (which heads share a thread does not change any head's result).
    int64_t parts = 1;
    while (queries * parts < nth && n_heads % (parts * 2) == 0) parts *= 2;
    const int64_t per_part = n_heads / parts;
    thread_local Scratch scratch;
    for (int64_t item = ith; item < queries * parts; item += nth) {
        const int64_t query = item / parts, h0 = item % parts * per_part;
        attend(dst, query / dst->src[0]->ne[2], query % dst->src[0]->ne[2], h0, h0 + per_part, scale, scratch);
    }
}

} // namespace

ggml_tensor *single_query_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v,
                                    ggml_tensor *mask, float scale) {
    const int64_t d = q->ne[0], n_heads = q->ne[1], n_q = q->ne[2], batch = q->ne[3], n_kv = k->ne[2];
    const bool cached_type = (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && v->type == k->type;
    if (q->type != GGML_TYPE_F32 || q->nb[0] != sizeof(float) || !cached_type || k->nb[0] != ggml_type_size(k->type) ||
        v->nb[0] != ggml_type_size(v->type) || k->ne[0] != d || v->ne[0] != d || v->ne[1] != k->ne[1] ||
        n_heads % k->ne[1] != 0 || v->ne[2] != n_kv || k->ne[3] != batch || v->ne[3] != batch || n_heads > 256)
        fail("single-query attention: expected q f32 [D, H, n_q, B] and k, v f32 or f16 [D, H_kv, n_kv, B] with "
             "contiguous rows, H a multiple of H_kv and at most 256 heads");
    if (mask &&
        ((mask->type != GGML_TYPE_F32 && mask->type != GGML_TYPE_F16) || mask->ne[0] != n_kv || mask->ne[1] != n_q ||
         mask->ne[2] != 1 || (mask->ne[3] != 1 && mask->ne[3] != batch) || !ggml_is_contiguous_rows(mask)))
        fail("single-query attention: the mask must be f32 or f16 [n_kv = ", n_kv, ", n_q = ", n_q, ", 1, 1 or B]");
    uint32_t bits;
    std::memcpy(&bits, &scale, sizeof bits);
    ggml_tensor *args[] = {q, k, v, mask};
    ggml_tensor *out =
        ggml_custom_4d(ctx, GGML_TYPE_F32, d * n_heads, n_q, batch, 1, args, mask ? 4 : 3, single_query_op,
                       GGML_N_TASKS_MAX, reinterpret_cast<void *>(static_cast<uintptr_t>(bits)));
    return ggml_set_name(out, kNode);
}

} // namespace chatterbox::kernels
