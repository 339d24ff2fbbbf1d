// Scaled dot-product and multi-head attention, plain, flash, blocked and single-query paths, against a
// naive reference.

#include "nn_harness.h"

#include "core/error.h"
#include "kernels/onednn.h"
#include "modules/attention.h"

#include <map>

namespace chatterbox {
namespace {

using test::NnHarness;

struct AttnCase {
    int64_t batch, n_q, n_kv, heads, kv_heads, head_dim;
    bool causal = false;
    enum { none, shared, per_batch, key_padding } mask = none;
};

// q: (B, n_q, H, D); k, v: (B, n_kv, H_kv, D); mask: additive (B_m, n_q, n_kv), B_m = 1 or B.
std::vector<double> naive_attention(const AttnCase &c, const std::vector<float> &q, const std::vector<float> &k,
                                    const std::vector<float> &v, const std::vector<float> &mask, int64_t mask_batch,
                                    double scale) {
    std::vector<double> out(size_t(c.batch * c.n_q * c.heads * c.head_dim), 0.0);
    const int64_t group = c.heads / c.kv_heads;
    for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t h = 0; h < c.heads; ++h)
            for (int64_t i = 0; i < c.n_q; ++i) {
                std::vector<double> s(size_t(c.n_kv));
                double top = -INFINITY;
                for (int64_t j = 0; j < c.n_kv; ++j) {
                    double dot = 0;
                    for (int64_t d = 0; d < c.head_dim; ++d)
                        dot += double(q[size_t(((b * c.n_q + i) * c.heads + h) * c.head_dim + d)]) *
                               k[size_t(((b * c.n_kv + j) * c.kv_heads + h / group) * c.head_dim + d)];
                    s[size_t(j)] = dot * scale;
                    if (!mask.empty()) s[size_t(j)] += mask[size_t(((b % mask_batch) * c.n_q + i) * c.n_kv + j)];
                    if (c.causal && j > i + (c.n_kv - c.n_q)) s[size_t(j)] = -INFINITY;
                    top = std::max(top, s[size_t(j)]);
                }
                double total = 0;
                for (double &x : s) total += (x = std::exp(x - top));
                for (int64_t j = 0; j < c.n_kv; ++j)
                    for (int64_t d = 0; d < c.head_dim; ++d)
                        out[size_t(((b * c.n_q + i) * c.heads + h) * c.head_dim + d)] +=
                            s[size_t(j)] / total *
                            v[size_t(((b * c.n_kv + j) * c.kv_heads + h / group) * c.head_dim + d)];
            }
    return out;
}

// Runs one graph with named f32 inputs.
class MultiInputRun {
  public:
    explicit MultiInputRun(Backend &backend) : graph_(backend) {}
    ggml_context *ctx() { return graph_.ctx(); }
    ggml_tensor *input(const std::string &name, const Shape &shape, std::vector<float> values) {
        ggml_tensor *t = graph_.input(name, GGML_TYPE_F32, shape);
        values_[t] = std::move(values);
        return t;
    }
    std::vector<float> run(ggml_tensor *out) {
        graph_.build({out});
        for (auto &[t, v] : values_) graph_.set_input(t, v);
        graph_.compute();
        return graph_.read_f32(out);
    }

  private:
    GraphRunner graph_;
    std::map<ggml_tensor *, std::vector<float>> values_;
};

// The paths that take this case: blocked attention takes unmasked, non-causal f32 attention;
// single_query any queries, not causal (its causality goes in the mask).
std::vector<nn::AttentionPath> paths_for(const AttnCase &c) {
    std::vector<nn::AttentionPath> paths{nn::AttentionPath::plain, nn::AttentionPath::flash};
    if (c.mask == AttnCase::none && !c.causal && kernels::onednn_available())
        paths.push_back(nn::AttentionPath::blocked);
    if (!c.causal) paths.push_back(nn::AttentionPath::single_query);
    return paths;
}

void attention_case(const AttnCase &c, const std::string &what, int threads = 2) {
    NnHarness h(BackendOptions{"cpu", threads});
    const auto q = h.input(size_t(c.batch * c.n_q * c.heads * c.head_dim), -2.0f, 2.0f);
    const auto k = h.input(size_t(c.batch * c.n_kv * c.kv_heads * c.head_dim), -2.0f, 2.0f);
    const auto v = h.input(size_t(c.batch * c.n_kv * c.kv_heads * c.head_dim));
    std::vector<float> mask, keep;
    int64_t mask_batch = 1;
    if (c.mask == AttnCase::shared || c.mask == AttnCase::per_batch) {
        mask_batch = c.mask == AttnCase::per_batch ? c.batch : 1;
        mask = h.input(size_t(mask_batch * c.n_q * c.n_kv), -3.0f, 0.0f);
        for (size_t i = 0; i < mask.size(); i += 3) mask[i] = -INFINITY;                          // blocked pairs
        for (int64_t row = 0; row < mask_batch * c.n_q; ++row) mask[size_t(row * c.n_kv)] = 0.0f; // one visible key
    } else if (c.mask == AttnCase::key_padding) {
        // Row b keeps its first n_kv - b keys.
        mask_batch = c.batch;
        for (int64_t b = 0; b < c.batch; ++b)
            for (int64_t j = 0; j < c.n_kv; ++j) keep.push_back(j < c.n_kv - b ? 1.0f : 0.0f);
        for (int64_t b = 0; b < c.batch; ++b)
            for (int64_t i = 0; i < c.n_q; ++i)
                for (int64_t j = 0; j < c.n_kv; ++j)
                    mask.push_back(keep[size_t(b * c.n_kv + j)] > 0 ? 0.0f : -INFINITY);
    }
    const double scale = 1.0 / std::sqrt(double(c.head_dim));
    const auto expected = naive_attention(c, q, k, v, mask, mask_batch, scale);

    for (nn::AttentionPath path : paths_for(c)) {
        MultiInputRun r(h.backend());
        nn::AttentionOptions o;
        o.causal = c.causal;
        o.path = path;
        if (c.mask == AttnCase::key_padding) {
            o.mask = nn::key_padding_mask(r.ctx(), r.input("keep", {c.batch, c.n_kv}, keep), c.n_q);
        } else if (!mask.empty()) {
            const Shape mask_shape = mask_batch == 1 ? Shape{c.n_q, c.n_kv} : Shape{mask_batch, 1, c.n_q, c.n_kv};
            o.mask = r.input("mask", mask_shape, mask);
        }
        ggml_tensor *out = nn::attention(r.ctx(), r.input("q", {c.batch, c.n_q, c.heads, c.head_dim}, q),
                                         r.input("k", {c.batch, c.n_kv, c.kv_heads, c.head_dim}, k),
                                         r.input("v", {c.batch, c.n_kv, c.kv_heads, c.head_dim}, v), o);
        EXPECT_EQ(NnHarness::torch_shape_of_4d(out), (Shape{1, c.batch, c.n_q, c.heads * c.head_dim})) << what;
        const bool flash = path == nn::AttentionPath::flash;
        // The flash path rounds the mask to f16 and sums in another order.
        test::expect_close(r.run(out), expected, flash ? 3e-3 : 1e-5,
                           what + " (" + nn::attention_path_name(path) + ")");
    }
}

TEST(NnAttention, MatchesNaive) {
    attention_case({2, 5, 7, 4, 4, 8}, "no mask, n_q != n_kv, batch 2");
    attention_case({1, 6, 6, 2, 2, 64, true}, "causal self-attention");
    attention_case({2, 3, 7, 2, 2, 16, true}, "causal with a past (decode-style)");
    attention_case({2, 4, 9, 4, 4, 8, false, AttnCase::shared}, "additive mask shared by the batch");
    attention_case({2, 4, 9, 2, 2, 8, false, AttnCase::per_batch}, "additive mask per batch row");
    attention_case({2, 5, 5, 2, 2, 8, true, AttnCase::per_batch}, "causal plus additive mask");
    attention_case({3, 4, 6, 2, 2, 8, false, AttnCase::key_padding}, "key padding");
    attention_case({2, 5, 8, 4, 2, 8, true}, "grouped queries (4 heads, 2 kv heads)");
}

TEST(NnAttention, OneQueryPerSequenceMatchesNaive) {
    attention_case({2, 1, 20, 4, 4, 12}, "one query, no mask, head size not a multiple of the lanes");
    attention_case({2, 1, 9, 4, 4, 8, false, AttnCase::shared}, "one query, mask shared by the batch");
    attention_case({3, 1, 37, 4, 2, 64, false, AttnCase::per_batch}, "one query, mask per row, grouped queries");
    attention_case({3, 1, 40, 8, 8, 16, false, AttnCase::key_padding}, "one query, key padding");
    attention_case({1, 1, 33, 16, 16, 64, false, AttnCase::per_batch}, "one sequence, one thread", 1);
    attention_case({1, 1, 33, 16, 16, 64, false, AttnCase::per_batch}, "one sequence, two threads", 2);
    // The single-query path attends 64 positions at a time and merges them.
    attention_case({2, 1, 150, 4, 4, 64, false, AttnCase::per_batch}, "one query over three chunks, mask per row", 2);
    attention_case({3, 1, 130, 4, 2, 64, false, AttnCase::key_padding},
                   "one query over three chunks, a row's last chunk padded away", 2);
    attention_case({2, 5, 150, 2, 2, 16, false, AttnCase::shared}, "several queries over three chunks", 2);
}

// Random keys and values of several sequences in f16 or q8_0 caches (heads of 64), and the
// single-query path over the first n_kv positions of the first `batch` of them.
struct Caches {
    static constexpr int64_t head_dim = 64;
    ggml_type type;
    int64_t capacity, heads, width;
    std::vector<uint8_t> k, v;
    std::vector<float> k_values, v_values; // what the caches hold, in f32

    Caches(NnHarness &values, int64_t sequences, int64_t capacity_, int64_t heads_ = 4, ggml_type type_ = GGML_TYPE_F16)
        : type(type_), capacity(capacity_), heads(heads_), width(heads_ * head_dim) {
        const int64_t rows = sequences * capacity;
        k = in_type(values.input(size_t(rows * width), -2.0f, 2.0f), rows);
        v = in_type(values.input(size_t(rows * width)), rows);
        k_values.resize(size_t(rows * width));
        v_values.resize(k_values.size());
        ggml_get_type_traits(type)->to_float(k.data(), k_values.data(), rows * width);
        ggml_get_type_traits(type)->to_float(v.data(), v_values.data(), rows * width);
    }
    std::vector<uint8_t> in_type(const std::vector<float> &x, int64_t rows) const {
        std::vector<uint8_t> out(size_t(rows) * ggml_row_size(type, width));
        if (type == GGML_TYPE_F16)
            ggml_fp32_to_fp16_row(x.data(), reinterpret_cast<ggml_fp16_t *>(out.data()), int64_t(x.size()));
        else
            ggml_quantize_chunk(type, x.data(), out.data(), 0, rows, width, nullptr);
        return out;
    }
    // queries: (batch, n_q, width); mask: f16 (mask_batch, n_q, n_kv). Returns (batch, n_q, width).
    std::vector<float> attend(int threads, int64_t batch, int64_t n_q, int64_t n_kv, const std::vector<float> &queries,
                              const std::vector<ggml_fp16_t> &mask, int64_t mask_batch) const {
        BackendOptions options{"cpu", threads};
        options.adapt_threads = false; // exactly `threads`, so the chunks spread as the test says
        Backend backend(options);
        GraphRunner g(backend);
        ggml_tensor *q = g.input("q", GGML_TYPE_F32, {batch, n_q, heads, head_dim});
        ggml_tensor *k_cache = g.input("k_cache", type, {batch, capacity, width});
        ggml_tensor *v_cache = g.input("v_cache", type, {batch, capacity, width});
        ggml_tensor *m = g.input("mask", GGML_TYPE_F16, {mask_batch, 1, n_q, n_kv});
        auto attended = [&](ggml_tensor *cache) {
            return ggml_view_4d(g.ctx(), cache, head_dim, heads, n_kv, batch, ggml_row_size(type, head_dim),
                                cache->nb[1], cache->nb[2], 0);
        };
        nn::AttentionOptions o;
        o.mask = m;
        o.path = nn::AttentionPath::single_query;
        ggml_tensor *out = nn::attention(g.ctx(), q, attended(k_cache), attended(v_cache), o);
        g.build({out});
        const size_t cache_bytes = size_t(batch * capacity) * ggml_row_size(type, width);
        g.set_input(q, queries);
        g.set_input(k_cache, k.data(), cache_bytes);
        g.set_input(v_cache, v.data(), cache_bytes);
        g.set_input(m, mask.data(), mask.size() * sizeof(ggml_fp16_t));
        g.compute();
        return g.read_f32(out);
    }
};

constexpr ggml_type kCacheTypes[] = {GGML_TYPE_F16, GGML_TYPE_Q8_0};

// What the T3 batch relies on: a sequence's single-query result over an f16 or q8_0 cache is the same
// bits alone, beside other sequences over a longer attended length, and on any number of threads.
TEST(NnAttention, SingleQueryIsTheSameInAnyBatch) {
    for (const ggml_type type : kCacheTypes) {
        for (const int64_t length : {41, 100}) { // in one chunk of 64 positions, over two
            SCOPED_TRACE(std::string(ggml_type_name(type)) + ", " + std::to_string(length) + " positions");
            NnHarness values;
            const Caches caches(values, 3, 192, 4, type);
            const int64_t width = caches.width;
            const auto q_all = values.input(size_t(3 * width), -2.0f, 2.0f);
            // Sequence 0 sees [0, length); the others see more. Returns sequence 0's output.
            auto run = [&](int64_t batch, int64_t n_kv, int threads) {
                std::vector<ggml_fp16_t> m(size_t(batch * n_kv));
                for (int64_t b = 0; b < batch; ++b)
                    for (int64_t j = 0; j < n_kv; ++j)
                        m[size_t(b * n_kv + j)] = ggml_fp32_to_fp16(j < length + 17 * b ? 0.0f : -INFINITY);
                const std::vector<float> all =
                    caches.attend(threads, batch, 1, n_kv,
                                  std::vector<float>(q_all.begin(), q_all.begin() + batch * width), m, batch);
                return std::vector<float>(all.begin(), all.begin() + width);
            };
            const int64_t own = length + 7;
            const std::vector<float> alone = run(1, own, 1);
            EXPECT_EQ(run(1, own, 2), alone) << "two threads";
            EXPECT_EQ(run(3, 192, 2), alone) << "beside two longer sequences, over more positions";
            EXPECT_EQ(run(2, 128, 1), alone) << "beside one, one thread";
        }
    }
}

// What a T3 prefill in parts relies on: each of several queries per sequence (causal mask rows over
// an f16 or q8_0 cache, two sequences sharing the mask) gets the same bits computed with all the
// others, with some of them over a shorter attended length, or on another thread count.
TEST(NnAttention, SingleQueryGivesEachOfSeveralQueriesItsOwnBits) {
    for (const ggml_type type : kCacheTypes) {
        SCOPED_TRACE(ggml_type_name(type));
        const int64_t batch = 2, n_q = 9, first = 30;
        NnHarness values;
        const Caches caches(values, batch, 64, 4, type);
        const int64_t width = caches.width;
        const auto q_all = values.input(size_t(batch * n_q * width), -2.0f, 2.0f);
        // Queries [q0, q1) of both sequences over n_kv positions; query i sees [0, first + i].
        auto run = [&](int64_t q0, int64_t q1, int64_t n_kv, int threads) {
            const int64_t n = q1 - q0;
            std::vector<float> queries;
            for (int64_t b = 0; b < batch; ++b)
                queries.insert(queries.end(), q_all.begin() + (b * n_q + q0) * width,
                               q_all.begin() + (b * n_q + q1) * width);
            std::vector<ggml_fp16_t> m(size_t(n * n_kv));
            for (int64_t i = 0; i < n; ++i)
                for (int64_t j = 0; j < n_kv; ++j)
                    m[size_t(i * n_kv + j)] = ggml_fp32_to_fp16(j <= first + q0 + i ? 0.0f : -INFINITY);
            return caches.attend(threads, batch, n, n_kv, queries, m, 1); // (batch, n, width)
        };
        const std::vector<float> whole = run(0, n_q, 64, 2);
        const std::vector<float> head = run(0, 4, 64, 1), tail = run(4, n_q, 48, 2);
        for (int64_t b = 0; b < batch; ++b) {
            const auto rows = [&](const std::vector<float> &out, int64_t n, int64_t from, int64_t count) {
                const auto begin = out.begin() + (b * n + from) * width;
                return std::vector<float>(begin, begin + count * width);
            };
            EXPECT_EQ(rows(head, 4, 0, 4), rows(whole, n_q, 0, 4)) << "sequence " << b << ", queries 0-3 on one thread";
            EXPECT_EQ(rows(tail, 5, 0, 5), rows(whole, n_q, 4, 5))
                << "sequence " << b << ", queries 4-8 over 48 positions";
        }
    }
}

// T3's sixteen heads over an f16 or q8_0 cache, eight at a time through the vectorised scores: the
// naive reference over the values the cache holds, and the same bits with the query's two chunks of
// positions on one, two or four threads.
TEST(NnAttention, SingleQueryOverSixteenCachedHeads) {
    for (const ggml_type type : kCacheTypes) {
        SCOPED_TRACE(ggml_type_name(type));
        const int64_t batch = 2, n_kv = 70;
        NnHarness values;
        const Caches caches(values, batch, n_kv, 16, type);
        const int64_t width = caches.width;
        const auto queries = values.input(size_t(batch * width), -2.0f, 2.0f);
        std::vector<ggml_fp16_t> mask;
        std::vector<float> mask_f32;
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t j = 0; j < n_kv; ++j) {
                mask_f32.push_back(j < n_kv - 9 * b && j % 7 != 3 ? 0.0f : -INFINITY);
                mask.push_back(ggml_fp32_to_fp16(mask_f32.back()));
            }
        const AttnCase c{batch, 1, n_kv, caches.heads, caches.heads, Caches::head_dim, false, AttnCase::per_batch};
        const auto expected = naive_attention(c, queries, caches.k_values, caches.v_values, mask_f32, batch, 1.0 / 8.0);

        const std::vector<float> both = caches.attend(1, batch, 1, n_kv, queries, mask, batch); // 16 heads, by 8
        test::expect_close(both, expected, 1e-5, "16 heads, one thread");
        const std::vector<float> first_alone(both.begin(), both.begin() + width);
        const std::vector<float> first_query(queries.begin(), queries.begin() + width);
        const std::vector<ggml_fp16_t> first_mask(mask.begin(), mask.begin() + n_kv);
        EXPECT_EQ(caches.attend(2, 1, 1, n_kv, first_query, first_mask, 1), first_alone) << "two threads";
        EXPECT_EQ(caches.attend(4, 1, 1, n_kv, first_query, first_mask, 1), first_alone) << "four threads";
    }
}

// Long enough for several query blocks of the blocked path (64 queries each, a partial last one),
// with key counts that are not a multiple of its 8-wide exponentiation, on one and two threads.
TEST(NnAttention, BlockedPathOverSeveralQueryBlocks) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    for (int threads : {1, 2}) {
        attention_case({2, 150, 131, 4, 4, 64}, "150 queries, 131 keys, 64-wide heads", threads);
        attention_case({1, 70, 33, 4, 2, 16}, "grouped queries over two blocks", threads);
    }
}

// The blocked path at bf16 (the flow's, where onednn_bf16 runs): within bf16 rounding of the naive
// result (Q, K, V and P rounded: ~2^-8 relative each, over sums of 64 products), visibly not the f32
// path's bits, and the same bits on one and two threads (the query blocks do not depend on them).
// Heads of 16 and 64 take kernels/bf16_attention.h's products, 80-wide ones oneDNN's.
TEST(NnAttention, BlockedPathInBf16) {
    if (!kernels::onednn_available()) GTEST_SKIP() << "built without oneDNN";
    if (!kernels::onednn_bf16_kernel().runs_here())
        GTEST_SKIP() << "no bf16 products here: " << kernels::onednn_bf16_kernel().why_not_here();
    for (const AttnCase &c :
         {AttnCase{2, 150, 131, 4, 4, 64}, AttnCase{1, 70, 33, 4, 2, 16}, AttnCase{1, 70, 33, 2, 2, 80}}) {
        NnHarness h(BackendOptions{"cpu", 1});
        const auto q = h.input(size_t(c.batch * c.n_q * c.heads * c.head_dim), -2.0f, 2.0f);
        const auto k = h.input(size_t(c.batch * c.n_kv * c.kv_heads * c.head_dim), -2.0f, 2.0f);
        const auto v = h.input(size_t(c.batch * c.n_kv * c.kv_heads * c.head_dim));
        const auto expected = naive_attention(c, q, k, v, {}, 1, 1.0 / std::sqrt(double(c.head_dim)));
        auto run = [&](int threads, kernels::ProductPrecision precision) {
            Backend backend(BackendOptions{"cpu", threads});
            MultiInputRun r(backend);
            nn::AttentionOptions o;
            o.path = nn::AttentionPath::blocked;
            o.precision = precision;
            return r.run(nn::attention(r.ctx(), r.input("q", {c.batch, c.n_q, c.heads, c.head_dim}, q),
                                       r.input("k", {c.batch, c.n_kv, c.kv_heads, c.head_dim}, k),
                                       r.input("v", {c.batch, c.n_kv, c.kv_heads, c.head_dim}, v), o));
        };
        const std::string what = concat(c.n_q, " queries, ", c.n_kv, " keys, ", c.head_dim, "-wide heads");
        const std::vector<float> rounded = run(1, kernels::ProductPrecision::bf16);
        test::expect_close(rounded, expected, 2e-2, what + " (blocked, bf16)");
        EXPECT_EQ(run(2, kernels::ProductPrecision::bf16), rounded) << what << ": two threads";
        const std::vector<float> exact = run(1, kernels::ProductPrecision::f32);
        double largest = 0;
        for (size_t i = 0; i < exact.size(); ++i) largest = std::max(largest, double(std::abs(exact[i] - rounded[i])));
        EXPECT_GT(largest, 1e-4) << what << ": the bf16 path gives the f32 path's result";
    }
}

TEST(NnAttention, BlockedAndSingleQueryPathsRejectWhatTheyDoNotCompute) {
    NnHarness h;
    GraphRunner g(h.backend());
    ggml_tensor *q = g.input("q", GGML_TYPE_F32, {1, 4, 2, 8});
    ggml_tensor *k = g.input("k", GGML_TYPE_F32, {1, 6, 2, 8});
    nn::AttentionOptions o;
    o.path = nn::AttentionPath::blocked;
    o.causal = true;
    EXPECT_THROW(nn::attention(g.ctx(), q, k, k, o), Error) << "blocked, causal";
    o.causal = false;
    o.mask = g.input("mask", GGML_TYPE_F32, {4, 6});
    EXPECT_THROW(nn::attention(g.ctx(), q, k, k, o), Error) << "blocked, masked";
    o.path = nn::AttentionPath::single_query;
    o.mask = nullptr;
    o.causal = true;
    EXPECT_THROW(nn::attention(g.ctx(), g.input("one", GGML_TYPE_F32, {1, 1, 2, 8}), k, k, o), Error)
        << "single query, causal";
}

// A KV cache's use (T3): keys and values are f16 views of the first n_kv positions of a longer
// cache, the causal mask comes prepared in f16; both paths read them as they are.
TEST(NnAttention, OverAnF16CacheWithAPreparedMask) {
    NnHarness h;
    const AttnCase c{2, 3, 7, 4, 4, 16, /*causal=*/true};
    const int64_t capacity = 10, width = c.kv_heads * c.head_dim;
    const auto q = h.input(size_t(c.batch * c.n_q * c.heads * c.head_dim), -2.0f, 2.0f);
    std::vector<ggml_fp16_t> k_cache(size_t(c.batch * capacity * width)), v_cache(k_cache.size());
    std::vector<float> k, v; // the attended positions (B, n_kv, H_kv, D), as f16 holds them
    const auto k_values = h.input(k_cache.size(), -2.0f, 2.0f), v_values = h.input(v_cache.size());
    for (size_t i = 0; i < k_cache.size(); ++i) {
        k_cache[i] = ggml_fp32_to_fp16(k_values[i]);
        v_cache[i] = ggml_fp32_to_fp16(v_values[i]);
        if (int64_t(i) / width % capacity < c.n_kv) {
            k.push_back(ggml_fp16_to_fp32(k_cache[i]));
            v.push_back(ggml_fp16_to_fp32(v_cache[i]));
        }
    }
    std::vector<ggml_fp16_t> mask(size_t(c.n_q * c.n_kv));
    for (int64_t i = 0; i < c.n_q; ++i)
        for (int64_t j = 0; j < c.n_kv; ++j)
            mask[size_t(i * c.n_kv + j)] = ggml_fp32_to_fp16(j <= i + (c.n_kv - c.n_q) ? 0.0f : -INFINITY);
    const auto expected = naive_attention(c, q, k, v, {}, 1, 1.0 / std::sqrt(double(c.head_dim)));

    for (nn::AttentionPath path : {nn::AttentionPath::plain, nn::AttentionPath::flash}) {
        GraphRunner g(h.backend());
        ggml_tensor *q_in = g.input("q", GGML_TYPE_F32, {c.batch, c.n_q, c.heads, c.head_dim});
        ggml_tensor *k_in = g.input("k_cache", GGML_TYPE_F16, {c.batch, capacity, width});
        ggml_tensor *v_in = g.input("v_cache", GGML_TYPE_F16, {c.batch, capacity, width});
        auto attended = [&](ggml_tensor *cache) {
            return ggml_view_4d(g.ctx(), cache, c.head_dim, c.kv_heads, c.n_kv, c.batch,
                                ggml_row_size(GGML_TYPE_F16, c.head_dim), cache->nb[1], cache->nb[2], 0);
        };
        nn::AttentionOptions o;
        o.mask = g.input("mask", GGML_TYPE_F16, {c.n_q, c.n_kv});
        o.path = path;
        ggml_tensor *out = nn::attention(g.ctx(), q_in, attended(k_in), attended(v_in), o);
        g.build({out});
        g.set_input(q_in, q);
        g.set_input(k_in, k_cache.data(), k_cache.size() * sizeof(ggml_fp16_t));
        g.set_input(v_in, v_cache.data(), v_cache.size() * sizeof(ggml_fp16_t));
        g.set_input(o.mask, mask.data(), mask.size() * sizeof(ggml_fp16_t));
        g.compute();
        // Against f16 keys ggml rounds the queries to f16 as well.
        test::expect_close(g.read_f32(out), expected, 3e-3,
                           path == nn::AttentionPath::flash ? "f16 cache (flash)" : "f16 cache (plain)");
    }
}

TEST(NnAttention, RejectsMismatchedInputs) {
    NnHarness h;
    GraphRunner g(h.backend());
    ggml_tensor *q = g.input("q", GGML_TYPE_F32, {1, 4, 2, 8});
    ggml_tensor *k = g.input("k", GGML_TYPE_F32, {1, 6, 2, 8});
    ggml_tensor *k_bad = g.input("k_bad", GGML_TYPE_F32, {1, 6, 2, 4});
    ggml_tensor *k_heads = g.input("k_heads", GGML_TYPE_F32, {1, 6, 3, 8});
    nn::AttentionOptions wrong_mask;
    wrong_mask.mask = g.input("mask", GGML_TYPE_F32, {4, 5});
    nn::AttentionOptions causal;
    causal.causal = true;
    EXPECT_THROW(nn::attention(g.ctx(), q, k_bad, k_bad), Error);
    EXPECT_THROW(nn::attention(g.ctx(), q, k_heads, k_heads), Error);
    EXPECT_THROW(nn::attention(g.ctx(), q, k, k, wrong_mask), Error);
    EXPECT_THROW(nn::attention(g.ctx(), k, q, q, causal), Error) << "causal with fewer keys than queries";
    causal.mask = g.input("f16_mask", GGML_TYPE_F16, {4, 6});
    EXPECT_THROW(nn::attention(g.ctx(), q, k, k, causal), Error) << "causal with a prepared f16 mask";
}

// x: (rows, in), w: (out, in) -> (rows, out)
std::vector<float> naive_linear(const std::vector<float> &x, const std::vector<float> &w, const std::vector<float> &b,
                                int64_t in, int64_t out) {
    const int64_t rows = int64_t(x.size()) / in;
    std::vector<float> y(size_t(rows * out));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < out; ++o) {
            double sum = b.empty() ? 0.0 : b[size_t(o)];
            for (int64_t i = 0; i < in; ++i) sum += double(x[size_t(r * in + i)]) * w[size_t(o * in + i)];
            y[size_t(r * out + o)] = float(sum);
        }
    return y;
}

TEST(NnMultiHeadAttention, SeparateFusedAndCross) {
    NnHarness h;
    const int64_t dim = 24, memory_dim = 10, heads = 4, head_dim = 8, inner = heads * head_dim;
    const int64_t batch = 2, frames = 5, memory_frames = 7;
    auto weight = [&](const std::string &name, int64_t out, int64_t in) {
        const float s = 1.0f / std::sqrt(float(in));
        return h.add(name, {out, in}, GGML_TYPE_F32, -s, s);
    };
    const auto wq = weight("m.attn.to_q.weight", inner, dim), bq = h.add("m.attn.to_q.bias", {inner});
    const auto wk = weight("m.attn.to_k.weight", inner, dim);
    const auto wv = weight("m.attn.to_v.weight", inner, dim);
    const auto wo = weight("m.attn.to_out.0.weight", dim, inner), bo = h.add("m.attn.to_out.0.bias", {dim});
    const auto wk_x = weight("m.cross.to_k.weight", inner, memory_dim);
    const auto wv_x = weight("m.cross.to_v.weight", inner, memory_dim);
    // Fused c_attn = [q | k | v] rows of the separate projections (q's bias, zero k/v bias).
    std::vector<float> fused_w = wq, fused_b = bq;
    fused_w.insert(fused_w.end(), wk.begin(), wk.end());
    fused_w.insert(fused_w.end(), wv.begin(), wv.end());
    fused_b.resize(size_t(3 * inner), 0.0f);
    h.add_values("m.fused.c_attn.weight", {3 * inner, dim}, fused_w);
    h.add_values("m.fused.c_attn.bias", {3 * inner}, fused_b);

    ModuleWeights w(h.store(), "m.", h.backend());
    nn::Linear out(w, "attn.to_out.0", inner, dim);
    nn::MultiHeadAttention self(nn::Linear(w, "attn.to_q", dim, inner), nn::Linear(w, "attn.to_k", dim, inner, false),
                                nn::Linear(w, "attn.to_v", dim, inner, false), out, int(heads));
    nn::MultiHeadAttention fused(nn::Linear(w, "fused.c_attn", dim, 3 * inner), out, int(heads));
    nn::MultiHeadAttention cross(nn::Linear(w, "attn.to_q", dim, inner),
                                 nn::Linear(w, "cross.to_k", memory_dim, inner, false),
                                 nn::Linear(w, "cross.to_v", memory_dim, inner, false), out, int(heads));
    EXPECT_THROW(nn::MultiHeadAttention(nn::Linear(w, "attn.to_q", dim, inner), out, 5), Error);
    w.load();

    const auto x = h.input(size_t(batch * frames * dim));
    const auto memory = h.input(size_t(batch * memory_frames * memory_dim));
    const AttnCase self_case{batch, frames, frames, heads, heads, head_dim, true};
    const AttnCase cross_case{batch, frames, memory_frames, heads, heads, head_dim};
    const double scale = 1.0 / std::sqrt(double(head_dim));
    const auto q = naive_linear(x, wq, bq, dim, inner);
    auto finish = [&](const std::vector<double> &heads_out) {
        std::vector<float> as_float(heads_out.begin(), heads_out.end());
        auto y = naive_linear(as_float, wo, bo, inner, dim);
        return std::vector<double>(y.begin(), y.end());
    };
    const auto expected_self = finish(naive_attention(self_case, q, naive_linear(x, wk, {}, dim, inner),
                                                      naive_linear(x, wv, {}, dim, inner), {}, 1, scale));
    const auto expected_cross =
        finish(naive_attention(cross_case, q, naive_linear(memory, wk_x, {}, memory_dim, inner),
                               naive_linear(memory, wv_x, {}, memory_dim, inner), {}, 1, scale));

    for (nn::AttentionPath path : {nn::AttentionPath::plain, nn::AttentionPath::flash}) {
        const bool flash = path == nn::AttentionPath::flash;
        const double tolerance = flash ? 3e-3 : 1e-5;
        const std::string tag = flash ? " (flash)" : " (plain)";
        nn::AttentionOptions o;
        o.path = path;
        o.causal = true;
        for (const nn::MultiHeadAttention *m : {&self, &fused}) {
            MultiInputRun r(h.backend());
            ggml_tensor *y = (*m)(r.ctx(), r.input("x", {batch, frames, dim}, x), o);
            test::expect_close(r.run(y), expected_self, tolerance, (m == &self ? "separate" : "fused") + tag);
        }
        o.causal = false;
        MultiInputRun r(h.backend());
        ggml_tensor *y = cross(r.ctx(), r.input("x", {batch, frames, dim}, x),
                               r.input("mem", {batch, memory_frames, memory_dim}, memory), o);
        test::expect_close(r.run(y), expected_cross, tolerance, "cross" + tag);
        MultiInputRun bad(h.backend());
        EXPECT_THROW(fused(bad.ctx(), bad.input("x", {1, 2, dim}, {}), bad.input("m", {1, 2, dim}, {}), o), Error);
    }
}

} // namespace
} // namespace chatterbox
