#include "kernels/onednn.h"

#include "core/error.h"
#include "core/tensor.h"
#include "kernels/bf16_attention.h"
#include "kernels/exponentiate.h"
#include "kernels/interned.h"
#include "kernels/tensor_rows.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace chatterbox::kernels {

namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine &cpu_engine() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

// What one ggml thread needs around a oneDNN call: a single-threaded oneDNN, its own stream and
// scratchpad (a shared scratchpad gives wrong results once two threads run the same primitive).
struct ThreadContext {
    dnnl::stream stream{cpu_engine()};
    std::vector<uint8_t> scratch;

    dnnl::memory scratchpad(const dnnl::memory::desc &desc) {
        if (scratch.size() < desc.get_size()) scratch.resize(desc.get_size());
        return dnnl::memory(desc, cpu_engine(), scratch.data());
    }
};

ThreadContext &this_thread() {
    omp_set_num_threads(1);
    thread_local ThreadContext context;
    return context;
}

// A matmul primitive with a user scratchpad (so that each thread can bring its own).
struct Matmul {
    dnnl::matmul primitive;
    dnnl::memory::desc scratchpad;
};

dnnl::matmul::primitive_desc matmul_desc(const dnnl::memory::desc &src, const dnnl::memory::desc &weights,
                                         const dnnl::memory::desc &dst) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, cpu_engine());
}

Matmul make_matmul(const dnnl::memory::desc &src, const dnnl::memory::desc &weights, const dnnl::memory::desc &dst) {
    const dnnl::matmul::primitive_desc pd = matmul_desc(src, weights, dst);
    return Matmul{dnnl::matmul(pd), pd.scratchpad_desc()};
}

// The same with an f32 bias [1, cols] added to every row and, where `gelu`, GELU (erf) after it.
Matmul make_matmul(const dnnl::memory::desc &src, const dnnl::memory::desc &weights, const dnnl::memory::desc &bias,
                   const dnnl::memory::desc &dst, bool gelu) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (gelu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
        attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, bias, dst), attr, cpu_engine());
    return Matmul{dnnl::matmul(pd), pd.scratchpad_desc()};
}

// Process-wide cache of matmul primitives by their operands' type and memory descriptors (shape,
// strides); the descriptors are few per model (one per layer shape and slice width), so it is never
// pruned. Sources and weights are of one type (f32, or bf16 with f32 sums); results are f32.
class MatmulCache {
  public:
    using Key = std::array<int64_t, 10>; // type, rows, inner, cols, then the strides of src, weights, dst

    const Matmul &get(dt type, const dims &src_dims, const dims &src_strides, const dims &wei_dims,
                      const dims &wei_strides, const dims &dst_strides) {
        const Key key{int64_t(type),  src_dims[0],    src_dims[1],    wei_dims[1],    src_strides[0],
                      src_strides[1], wei_strides[0], wei_strides[1], dst_strides[0], dst_strides[1]};
        std::lock_guard<std::mutex> lock(mutex_);
        auto found = cache_.find(key);
        if (found != cache_.end()) return found->second;
        const dnnl::memory::desc src(src_dims, type, src_strides), wei(wei_dims, type, wei_strides),
            dst({src_dims[0], wei_dims[1]}, dt::f32, dst_strides);
        return cache_.emplace(key, make_matmul(src, wei, dst)).first->second;
    }

  private:
    std::mutex mutex_;
    std::map<Key, Matmul> cache_;
};

MatmulCache &matmul_cache() {
    static MatmulCache cache;
    return cache;
}

dnnl::memory plain(const dims &shape, const dims &strides, const void *data, dt type = dt::f32) {
    return dnnl::memory(dnnl::memory::desc(shape, type, strides), cpu_engine(), const_cast<void *>(data));
}

void execute(ThreadContext &thread, const Matmul &m, const dnnl::memory &src, const dnnl::memory &weights,
             const dnnl::memory &dst, const dnnl::memory *bias = nullptr) {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src},
                                               {DNNL_ARG_WEIGHTS, weights},
                                               {DNNL_ARG_DST, dst},
                                               {DNNL_ARG_SCRATCHPAD, thread.scratchpad(m.scratchpad)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, *bias);
    m.primitive.execute(thread.stream, args);
}

// dst (rows × cols, dst_strides, f32) = src (rows × inner, src_strides) · weights (inner × cols,
// wei_strides), both operands of `type` (f32 or bf16)
void multiply(ThreadContext &thread, dt type, const void *src, const dims &src_dims, const dims &src_strides,
              const void *weights, const dims &wei_dims, const dims &wei_strides, float *dst, const dims &dst_strides) {
    const Matmul &m = matmul_cache().get(type, src_dims, src_strides, wei_dims, wei_strides, dst_strides);
    execute(thread, m, plain(src_dims, src_strides, src, type), plain(wei_dims, wei_strides, weights, type),
            plain({src_dims[0], wei_dims[1]}, dst_strides, dst));
}

// ---------------------------------------------------------------------------- reordered weights

// x[0..n) rounded to the nearest bf16 (ties to even, as oneDNN's own reorder). Only called where the
// CPU has AVX-512 BF16 (the onednn_bf16 kernel's runs_here).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void to_bf16(const float *x, int64_t n, uint16_t *out) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
    if (i < n) {
        const __mmask16 tail = __mmask16((1u << (n - i)) - 1);
        const __m256i rounded = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(tail, x + i));
        _mm256_mask_storeu_epi16(out + i, tail, rounded);
    }
}

// Rows [first, first + count) of activations ggml [k, ne1, ne2, ne3] whose rows are contiguous but
// may lie anywhere (a view: e.g. FrameConv1d's overlapping windows of frames, one frame apart).
struct ActivationRows {
    const ggml_tensor *x;
    int64_t first, count;

    const float *row(int64_t index) const { return reinterpret_cast<const float *>(row_address(x, index)); }
    // The first row, where the rows follow one another without gaps; else nullptr.
    const float *contiguous() const { return ggml_is_contiguous(x) ? row(first) : nullptr; }
    template <class F> void for_each(F f) const {
        for (int64_t r = 0; r < count; ++r) f(r, row(first + r));
    }
};

// One weight ggml [k, m] = (k × m) in oneDNN's preferred layout for products in `type` (f32, or
// bf16: operands rounded to bf16, sums in f32), with the primitives that read it (one per slice
// width, as they come).
class Reordered final : public PackedWeight {
  public:
    Reordered(const float *data, int64_t k, int64_t m, dt type) : k_(k), m_(m), type_(type) {
        // The layout is asked for a typical slice width; every other width reuses it.
        constexpr int64_t kTypicalColumns = 256;
        desc_ = matmul_desc(rows_desc(kTypicalColumns, k, type), dnnl::memory::desc({k, m}, type, tag::any),
                            rows_desc(kTypicalColumns, m, dt::f32))
                    .weights_desc();
        memory_ = dnnl::memory(desc_, cpu_engine());
        dnnl::memory source = plain({k, m}, {1, k}, data);
        dnnl::stream stream(cpu_engine());
        dnnl::reorder(source, memory_).execute(stream, source, memory_);
        stream.wait();
    }

    ggml_tensor *product(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x) const override;
    ggml_tensor *product_with(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x,
                              const Epilogue &epilogue) const override;
    size_t bytes() const override { return desc_.get_size(); }

    // dst (rows.count × m) = the rows (of k) · this weight (+ bias (f32 [m]), then GELU where `gelu`)
    void multiply(ThreadContext &thread, const ActivationRows &rows, float *dst, const float *bias = nullptr,
                  bool gelu = false) const {
        const int64_t columns = rows.count;
        const dnnl::memory out = plain({columns, m_}, {m_, 1}, dst);
        std::optional<dnnl::memory> bias_memory;
        if (bias) bias_memory = plain({1, m_}, {m_, 1}, bias);
        const dnnl::memory *added = bias_memory ? &*bias_memory : nullptr;
        const Matmul &m = primitive(columns, bias != nullptr, gelu);
        if (type_ == dt::f32) {
            const float *x = rows.contiguous();
            thread_local std::vector<float> gathered;
            if (!x) {
                gathered.resize(size_t(columns * k_));
                rows.for_each([&](int64_t r, const float *row) {
                    std::memcpy(gathered.data() + r * k_, row, size_t(k_) * sizeof(float));
                });
                x = gathered.data();
            }
            execute(thread, m, plain({columns, k_}, {k_, 1}, x), memory_, out, added);
            return;
        }
        thread_local std::vector<uint16_t> rounded;
        rounded.resize(size_t(columns * k_));
        if (const float *x = rows.contiguous())
            to_bf16(x, columns * k_, rounded.data());
        else
            rows.for_each([&](int64_t r, const float *row) { to_bf16(row, k_, rounded.data() + r * k_); });
        execute(thread, m, dnnl::memory(rows_desc(columns, k_, dt::bf16), cpu_engine(), rounded.data()), memory_, out,
                added);
    }

  private:
    static dnnl::memory::desc rows_desc(int64_t rows, int64_t width, dt type) {
        return dnnl::memory::desc({rows, width}, type, tag::ab);
    }

    const Matmul &primitive(int64_t columns, bool bias, bool gelu) const {
        const auto key = std::make_tuple(columns, bias, gelu);
        std::lock_guard<std::mutex> lock(mutex_);
        auto found = primitives_.find(key);
        if (found != primitives_.end()) return found->second;
        const dnnl::memory::desc src = rows_desc(columns, k_, type_), dst = rows_desc(columns, m_, dt::f32);
        return primitives_
            .emplace(key, bias ? make_matmul(src, desc_, rows_desc(1, m_, dt::f32), dst, gelu)
                               : make_matmul(src, desc_, dst))
            .first->second;
    }

    int64_t k_, m_;
    dt type_;
    dnnl::memory::desc desc_;
    dnnl::memory memory_;
    mutable std::mutex mutex_;
    mutable std::map<std::tuple<int64_t, bool, bool>, Matmul> primitives_; // by slice width and epilogue, as they come
};

// ---------------------------------------------------------------------------- matmul

// What a product node carries to its op (interned, so that the address stays valid): the weight's
// Reordered copy, or nullptr to read it in place, and whether GELU follows the bias (dst->src[2]).
struct ProductParams {
    const Reordered *reordered;
    bool gelu;
    bool operator<(const ProductParams &o) const { return std::tie(reordered, gelu) < std::tie(o.reordered, o.gelu); }
};

void matmul_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    const ProductParams &params = *static_cast<const ProductParams *>(userdata);
    const ggml_tensor *x = dst->src[0], *weight = dst->src[1], *bias = dst->src[2];
    const int64_t k = weight->ne[0], m = weight->ne[1], columns = ggml_nrows(x);
    const int64_t first = columns * ith / nth, count = columns * (ith + 1) / nth - first;
    if (count == 0) return;
    // x: count rows of k; weight ggml [k, m] = (k × m) with strides (1, k); dst: count rows of m
    float *out = static_cast<float *>(dst->data) + first * m;
    if (params.reordered) {
        params.reordered->multiply(this_thread(), ActivationRows{x, first, count}, out,
                                   bias ? static_cast<const float *>(bias->data) : nullptr, params.gelu);
        return;
    }
    const float *rows = static_cast<const float *>(x->data) + first * k; // x is contiguous (matmul_node)
    multiply(this_thread(), dt::f32, rows, {count, k}, {k, 1}, weight->data, {k, m}, {1, k}, out, {m, 1});
}

// ---------------------------------------------------------------------------- attention

// Measured best of 32 / 64 / 128 at n_kv = 1000 (bench/history/2026-12-01-flow-kernels-zen3.md).
constexpr int64_t kQueryBlock = 64;

// `count` rows of `width` floats, `stride` floats apart -> contiguous bf16 rows.
void rows_to_bf16(const float *x, int64_t count, int64_t width, int64_t stride, uint16_t *out) {
    for (int64_t r = 0; r < count; ++r) to_bf16(x + r * stride, width, out + r * width);
}

// What an attention node carries to its op (interned, so that the address stays valid).
struct AttentionParams {
    float scale;
    ProductPrecision precision;
    bool operator<(const AttentionParams &o) const {
        return std::tie(scale, precision) < std::tie(o.scale, o.precision);
    }
};

// The row of an attention operand ggml [D, heads, positions, batch] at (head, position, batch row).
const float *head_row(const ggml_tensor *t, int64_t head, int64_t position, int64_t row) {
    return reinterpret_cast<const float *>(static_cast<const char *>(t->data) + head * t->nb[1] + position * t->nb[2] +
                                           row * t->nb[3]);
}

// The bf16 path's tasks where the CPU has AVX-512 BF16 and the heads are at most 64 wide: the same
// steps with bf16_attention's register blocks for the two products instead of oneDNN's (English's
// CFM 10.7 -> 9.6 s on the Zen 5 VM, `s3gen`; flow_mel 0.019 -> 0.018 from the official, mean flow
// 0.014 -> 0.012). The probabilities' rows are an even number of values, the one past n_kv zero.
void attention_tasks_bf16_blocks(ggml_tensor *dst, float scale, int64_t first_task, int64_t end_task) {
    const ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
    const int64_t head_dim = q->ne[0], heads = q->ne[1], n_q = q->ne[2], n_kv = k->ne[2];
    const int64_t kv_heads = k->ne[1], group = heads / kv_heads, blocks = (n_q + kQueryBlock - 1) / kQueryBlock;
    const int64_t f = sizeof(float), q_row = int64_t(q->nb[2]) / f, k_row = int64_t(k->nb[2]) / f,
                  v_row = int64_t(v->nb[2]) / f, score_stride = bf16_attention::score_stride(n_kv),
                  p_stride = bf16_attention::probability_stride(n_kv);
    thread_local std::vector<float> scores, inverse_sums;
    thread_local std::vector<uint16_t> q16, k16, v16, p16;
    scores.resize(size_t(kQueryBlock * score_stride));
    inverse_sums.resize(size_t(kQueryBlock));
    q16.resize(size_t(kQueryBlock * head_dim));
    k16.resize(size_t(bf16_attention::packed_keys_size(n_kv, head_dim)));
    v16.resize(size_t(bf16_attention::packed_values_size(n_kv, head_dim)));
    p16.assign(size_t(kQueryBlock * p_stride), 0); // the value past an odd n_kv stays 0
    int64_t packed_kv = -1; // the (batch row, key/value head) whose keys and values k16 and v16 hold
    for (int64_t task = first_task; task < end_task; ++task) {
        const int64_t block = task % blocks, h = task / blocks % heads, b = task / (blocks * heads);
        const int64_t first = block * kQueryBlock, rows = std::min(kQueryBlock, n_q - first), kv_head = h / group;
        rows_to_bf16(head_row(q, h, first, b), rows, head_dim, q_row, q16.data());
        if (b * kv_heads + kv_head != packed_kv) {
            bf16_attention::pack_keys(head_row(k, kv_head, 0, b), n_kv, head_dim, k_row, k16.data());
            bf16_attention::pack_values(head_row(v, kv_head, 0, b), n_kv, head_dim, v_row, v16.data());
            packed_kv = b * kv_heads + kv_head;
        }
        bf16_attention::scores(q16.data(), rows, head_dim, k16.data(), n_kv, scores.data());
        for (int64_t r = 0; r < rows; ++r)
            inverse_sums[size_t(r)] =
                1.0f / exponentiate_to_bf16(scores.data() + r * score_stride, n_kv, scale, p16.data() + r * p_stride);
        float *out = static_cast<float *>(dst->data) + ((b * n_q + first) * heads + h) * head_dim;
        bf16_attention::weighted_values(p16.data(), rows, v16.data(), n_kv, head_dim, inverse_sums.data(), out,
                                        head_dim * heads);
    }
}

// One task is a (batch row, head, query block). At bf16 the operands are rounded into contiguous
// copies first: the query block's rows, the head's keys and values (once per run of tasks on the
// same key/value head), and the probabilities after the exponentiation; sums stay f32. With relative
// positions (src[3], src[4]; f32 only) the block's positional scores come from one more product, of
// its position queries with the window of the table its offsets reach, and are added to the scores
// before the exponentiation.
void attention_op(ggml_tensor *dst, int ith, int nth, void *userdata) {
    const ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *pq = dst->src[3], *table = dst->src[4];
    const AttentionParams &params = *static_cast<const AttentionParams *>(userdata);
    const bool bf16 = params.precision == ProductPrecision::bf16, relative = pq != nullptr;
    const dt type = bf16 ? dt::bf16 : dt::f32;
    const int64_t head_dim = q->ne[0], heads = q->ne[1], n_q = q->ne[2], batch = q->ne[3], n_kv = k->ne[2];
    const int64_t kv_heads = k->ne[1], group = heads / kv_heads, blocks = (n_q + kQueryBlock - 1) / kQueryBlock;
    const int64_t tasks = batch * heads * blocks;
    if (bf16 && !relative && bf16_attention::runs_here() && bf16_attention::takes(head_dim))
        return attention_tasks_bf16_blocks(dst, params.scale, tasks * ith / nth, tasks * (ith + 1) / nth);
    const int64_t f = sizeof(float), q_row = int64_t(q->nb[2]) / f, k_row = int64_t(k->nb[2]) / f,
                  v_row = int64_t(v->nb[2]) / f, pq_row = relative ? int64_t(pq->nb[2]) / f : 0,
                  table_row = relative ? int64_t(table->nb[2]) / f : 0;
    // Operand row strides: in ggml's tensors, or in the contiguous bf16 copies.
    const dims q_strides{bf16 ? head_dim : q_row, 1}, kt_strides{1, bf16 ? head_dim : k_row},
        v_strides{bf16 ? head_dim : v_row, 1}, o_strides{head_dim * heads, 1}, s_strides{n_kv, 1},
        pq_strides{pq_row, 1}, table_t_strides{1, table_row};
    ThreadContext &thread = this_thread();
    thread_local std::vector<float> scores, inverse_sums, positional;
    thread_local std::vector<uint16_t> q16, k16, v16, p16;
    scores.resize(size_t(kQueryBlock * n_kv));
    inverse_sums.resize(size_t(kQueryBlock));
    if (relative) positional.resize(size_t(kQueryBlock * (n_kv + kQueryBlock - 1)));
    if (bf16) {
        q16.resize(size_t(kQueryBlock * head_dim));
        k16.resize(size_t(n_kv * head_dim));
        v16.resize(size_t(n_kv * head_dim));
        p16.resize(size_t(kQueryBlock * n_kv));
    }
    int64_t rounded_kv = -1; // the (batch row, key/value head) whose copies k16 and v16 hold
    for (int64_t task = tasks * ith / nth; task < tasks * (ith + 1) / nth; ++task) {
        const int64_t block = task % blocks, h = task / blocks % heads, b = task / (blocks * heads);
        const int64_t first = block * kQueryBlock, rows = std::min(kQueryBlock, n_q - first), kv_head = h / group;
        const void *queries = head_row(q, h, first, b), *keys = head_row(k, kv_head, 0, b),
                   *values = head_row(v, kv_head, 0, b);
        if (bf16) {
            rows_to_bf16(head_row(q, h, first, b), rows, head_dim, q_row, q16.data());
            if (b * kv_heads + kv_head != rounded_kv) {
                rows_to_bf16(head_row(k, kv_head, 0, b), n_kv, head_dim, k_row, k16.data());
                rows_to_bf16(head_row(v, kv_head, 0, b), n_kv, head_dim, v_row, v16.data());
                rounded_kv = b * kv_heads + kv_head;
            }
            queries = q16.data(), keys = k16.data(), values = v16.data();
        }
        float *out = static_cast<float *>(dst->data) + ((b * n_q + first) * heads + h) * head_dim;
        multiply(thread, type, queries, {rows, head_dim}, q_strides, keys, {head_dim, n_kv}, kt_strides, scores.data(),
                 s_strides);
        // Query first + r, key j reads table row n−1−(first+r)+j: row r of the window from row
        // n − first − rows reads its columns from rows − 1 − r on.
        const int64_t window = n_kv + rows - 1, window_start = n_kv - first - rows;
        if (relative)
            multiply(thread, dt::f32, head_row(pq, h, first, b), {rows, head_dim}, pq_strides,
                     head_row(table, h, window_start, 0), {head_dim, window}, table_t_strides, positional.data(),
                     {window, 1});
        for (int64_t r = 0; r < rows; ++r) {
            float *row = scores.data() + r * n_kv;
            if (relative) {
                const float *shifted = positional.data() + r * window + (rows - 1 - r);
                for (int64_t j = 0; j < n_kv; ++j) row[j] += shifted[j];
            }
            inverse_sums[r] = 1.0f / (bf16 ? exponentiate_to_bf16(row, n_kv, params.scale, p16.data() + r * n_kv)
                                           : exponentiate(row, n_kv, params.scale));
        }
        const void *probabilities = bf16 ? static_cast<const void *>(p16.data()) : scores.data();
        multiply(thread, type, probabilities, {rows, n_kv}, s_strides, values, {n_kv, head_dim}, v_strides, out,
                 o_strides);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t d = 0; d < head_dim; ++d) out[r * head_dim * heads + d] *= inverse_sums[r];
    }
}

constexpr const char *kMatmulNode = "onednn.matmul";
constexpr const char *kAttentionNode = "onednn.blocked_attention";

} // namespace

bool onednn_available() { return true; }

namespace {

// A packed copy is read instead of the weight, which may then be of any type.
void check_operands(const ggml_tensor *weight, const ggml_tensor *x, bool packed) {
    if ((weight->type != GGML_TYPE_F32 && !packed) || !ggml_is_contiguous(weight) || ggml_n_dims(weight) > 2 ||
        x->type != GGML_TYPE_F32 || x->ne[0] != weight->ne[0])
        fail("onednn_matmul: needs an f32 weight ggml [K, M] and f32 activations ggml [K, ...], got ",
             ggml_type_name(weight->type), " [", weight->ne[0], ", ", weight->ne[1], "] and ", ggml_type_name(x->type),
             " [", x->ne[0], ", ...]");
}

// copy: the weight's Reordered copy, or nullptr to read it in place (no epilogue then).
ggml_tensor *matmul_node(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x, const Reordered *copy,
                         const Epilogue &epilogue = {}) {
    check_operands(weight, x, copy != nullptr);
    ggml_tensor *bias = epilogue.bias;
    if (bias && (bias->type != GGML_TYPE_F32 || !ggml_is_contiguous(bias) || ggml_nelements(bias) != weight->ne[1]))
        fail("onednn_matmul: the bias of ", ggml_get_name(weight), " must be a contiguous f32 [", weight->ne[1], "]");
    // A packed weight's product reads rows wherever they are; the weight read in place needs them in one block.
    if (copy ? x->nb[0] != sizeof(float) : !ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor *args[] = {x, weight, bias};
    const ProductParams params{copy, epilogue.activation == Epilogue::Activation::gelu_erf};
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, weight->ne[1], x->ne[1], x->ne[2], x->ne[3], args, bias ? 3 : 2,
                                    matmul_op, GGML_N_TASKS_MAX, const_cast<ProductParams *>(interned(params)));
    return ggml_set_name(y, kMatmulNode);
}

ggml_tensor *Reordered::product(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x) const {
    return matmul_node(ctx, weight, x, this);
}

// oneDNN adds the bias and applies GELU (erf) to each block of the result as it writes it. Only
// epilogues with a bias (every layer that asks for one has it) and without a residual; its GELU
// (tanh) would not round as nn::gelu_tanh does.
ggml_tensor *Reordered::product_with(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x,
                                     const Epilogue &epilogue) const {
    if (!epilogue.bias || epilogue.residual || epilogue.activation == Epilogue::Activation::gelu_tanh) return nullptr;
    return matmul_node(ctx, weight, x, this, epilogue);
}

void check_in_host_memory(const ggml_tensor *weight, const char *kernel) {
    if (!weight->data || !weight->buffer || !ggml_backend_buffer_is_host(weight->buffer))
        fail(kernel, ": ", ggml_get_name(weight), " is not in host memory");
}

class OnednnF32 final : public MatmulKernel {
  public:
    const char *name() const override { return "onednn_f32"; }
    bool on_by_default() const override { return false; }
    bool runs_here() const override { return true; }
    const char *why_not_here() const override { return ""; }
    bool takes(const ggml_tensor *weight, const KernelSelection &) const override {
        return weight->type == GGML_TYPE_F32 && ggml_n_dims(weight) <= 2 && ggml_is_contiguous(weight);
    }
    std::unique_ptr<PackedWeight> pack(const ggml_tensor *weight, const KernelSelection &,
                                       HugePageArena &) const override {
        check_in_host_memory(weight, name());
        return std::make_unique<Reordered>(static_cast<const float *>(weight->data), weight->ne[0], weight->ne[1],
                                           dt::f32);
    }
    double node_flops(const ggml_tensor *node) const override { return onednn_matmul_flops(node); }
};

// Any float weight (f32, f16, bf16 or a quantised type ggml can dequantise), widened to f32 and
// rounded to bf16 at load; the activations are rounded as each thread multiplies its slice. On by
// default where the CPU multiplies bf16 natively (AVX-512 BF16; oneDNN takes AMX where there is
// one), for the components that allow bf16 products.
class OnednnBf16 final : public MatmulKernel {
  public:
    const char *name() const override { return "onednn_bf16"; }
    ProductPrecision precision() const override { return ProductPrecision::bf16; }
    bool runs_here() const override {
        return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl");
    }
    const char *why_not_here() const override { return "the CPU has no AVX-512 BF16 (with BW and VL)"; }
    bool takes(const ggml_tensor *weight, const KernelSelection &) const override {
        const bool widens = weight->type == GGML_TYPE_F32 || ggml_get_type_traits(weight->type)->to_float;
        return widens && ggml_n_dims(weight) <= 2 && ggml_is_contiguous(weight);
    }
    std::unique_ptr<PackedWeight> pack(const ggml_tensor *weight, const KernelSelection &,
                                       HugePageArena &) const override {
        check_in_host_memory(weight, name());
        const int64_t k = weight->ne[0], m = weight->ne[1];
        if (weight->type == GGML_TYPE_F32)
            return std::make_unique<Reordered>(static_cast<const float *>(weight->data), k, m, dt::bf16);
        const std::vector<float> widened =
            to_f32(TensorView{ggml_get_name(weight), weight->type, {m, k}, weight->data, ggml_nbytes(weight), nullptr});
        return std::make_unique<Reordered>(widened.data(), k, m, dt::bf16);
    }
    double node_flops(const ggml_tensor *node) const override { return onednn_matmul_flops(node); }
};

} // namespace

ggml_tensor *onednn_matmul(ggml_context *ctx, ggml_tensor *weight, ggml_tensor *x) {
    return matmul_node(ctx, weight, x, nullptr);
}

const MatmulKernel &onednn_f32_kernel() {
    static const OnednnF32 kernel;
    return kernel;
}

const MatmulKernel &onednn_bf16_kernel() {
    static const OnednnBf16 kernel;
    return kernel;
}

ggml_tensor *blocked_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v, float scale,
                               ProductPrecision precision, const RelativePositions &relative) {
    std::vector<ggml_tensor *> args{q, k, v};
    if (relative.queries || relative.table) {
        if (!relative.queries || !relative.table)
            fail("blocked attention: relative positions need queries and a table");
        if (precision != ProductPrecision::f32) fail("blocked attention: relative positions are computed in f32 only");
        const ggml_tensor *pq = relative.queries, *table = relative.table;
        const int64_t n = q->ne[2];
        if (k->ne[2] != n || k->ne[1] != q->ne[1] || !ggml_are_same_shape(pq, q) || table->ne[0] != q->ne[0] ||
            table->ne[1] != q->ne[1] || table->ne[2] != 2 * n - 1 || table->ne[3] != 1)
            fail("blocked attention: relative positions need as many keys as queries, one key head per query head, "
                 "position queries shaped as q and a table ggml [D, H, 2n - 1, 1]; got q [",
                 q->ne[0], ", ", q->ne[1], ", ", n, ", ", q->ne[3], "], ", k->ne[2], " keys, table [", table->ne[0],
                 ", ", table->ne[1], ", ", table->ne[2], ", ", table->ne[3], "]");
        args.push_back(relative.queries);
        args.push_back(relative.table);
    }
    for (const ggml_tensor *t : args)
        if (t->type != GGML_TYPE_F32 || t->nb[0] != sizeof(float) || t->nb[2] % sizeof(float) != 0)
            fail("blocked attention: q, k, v and the relative positions must be f32 with contiguous rows (",
                 ggml_get_name(t), " is ", ggml_type_name(t->type), ")");
    if (precision == ProductPrecision::bf16 && !onednn_bf16_kernel().runs_here())
        fail("blocked attention: no bf16 products here: ", onednn_bf16_kernel().why_not_here());
    ggml_tensor *out = ggml_custom_4d(ctx, GGML_TYPE_F32, q->ne[0] * q->ne[1], q->ne[2], q->ne[3], 1, args.data(),
                                      int(args.size()), attention_op, GGML_N_TASKS_MAX,
                                      const_cast<AttentionParams *>(interned(AttentionParams{scale, precision})));
    return ggml_set_name(out, kAttentionNode);
}

double onednn_matmul_flops(const ggml_tensor *node) {
    if (node->op != GGML_OP_CUSTOM || std::strcmp(node->name, kMatmulNode) != 0) return 0;
    return 2.0 * double(node->src[1]->ne[0]) * double(ggml_nelements(node));
}

double blocked_attention_flops(const ggml_tensor *node) {
    if (node->op != GGML_OP_CUSTOM || std::strcmp(node->name, kAttentionNode) != 0) return 0;
    const ggml_tensor *q = node->src[0], *k = node->src[1];
    const double products = node->src[3] ? 3.0 : 2.0;
    return 2.0 * products * double(q->ne[0]) * double(q->ne[1]) * double(q->ne[2]) * double(q->ne[3]) *
           double(k->ne[2]);
}

} // namespace chatterbox::kernels
