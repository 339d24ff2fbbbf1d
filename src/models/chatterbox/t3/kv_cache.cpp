#include "models/chatterbox/t3/kv_cache.h"

#include "core/error.h"
#include "core/huge_pages.h"

#include "ggml-backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::t3 {

ggml_type kv_cache_type(const std::string &name) {
    for (const ggml_type type : {GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_F32})
        if (name == ggml_type_name(type)) return type;
    throw InvalidArgument(concat("KV cache type \"", name, "\": expected f16, q8_0 or f32"));
}

KvCache::KvCache(Backend &backend, const HParams &hp, int n_rows, int capacity, ggml_type type)
    : n_rows_(n_rows), capacity_(capacity), type_(type) {
    if (type != GGML_TYPE_F32 && type != GGML_TYPE_F16 && type != GGML_TYPE_Q8_0)
        fail("T3 KV cache: type ", ggml_type_name(type), " is not supported (f32, f16 or q8_0)");
    // Only the CPU's single-query attention reads q8_0 keys and values, whole 32-value blocks per head.
    if (type == GGML_TYPE_Q8_0 && !backend.is_cpu())
        fail("T3 KV cache: q8_0 is for the CPU backend only, not ", backend.description());
    if (type == GGML_TYPE_Q8_0 && hp.head_dim % ggml_blck_size(type) != 0)
        fail("T3 KV cache: q8_0 needs heads of a multiple of ", ggml_blck_size(type), " values, not ", hp.head_dim);
    if (n_rows < 1 || capacity < 1) fail("T3 KV cache: invalid size ", n_rows, " rows x ", capacity, " positions");
    const size_t n_tensors = 2 * size_t(hp.n_layers);
    ggml_init_params params{ggml_tensor_overhead() * n_tensors, nullptr, /*no_alloc=*/true};
    ctx_ = ggml_init(params);
    if (!ctx_) fail("T3 KV cache: cannot create a ggml context");
    for (int l = 0; l < hp.n_layers; ++l) {
        ggml_tensor *k = ggml_new_tensor_3d(ctx_, type, hp.hidden, capacity, n_rows);
        ggml_tensor *v = ggml_new_tensor_3d(ctx_, type, hp.hidden, capacity, n_rows);
        ggml_set_name(k, ("t3.cache_k." + std::to_string(l)).c_str());
        ggml_set_name(v, ("t3.cache_v." + std::to_string(l)).c_str());
        k_.push_back(k);
        v_.push_back(v);
    }
    buffer_ = ggml_backend_alloc_ctx_tensors(ctx_, backend.main());
    if (!buffer_) {
        ggml_free(ctx_);
        fail("T3 KV cache: cannot allocate ", n_rows, " rows x ", capacity, " positions of ", ggml_type_name(type),
             " on ", backend.description());
    }
    // Every decode step streams through the rows in use; the advice must come before the clear touches them.
    if (ggml_backend_buffer_is_host(buffer_))
        advise_huge_pages(ggml_backend_buffer_get_base(buffer_), ggml_backend_buffer_get_size(buffer_));
    // The plain attention path multiplies masked positions by a zero weight: they must hold finite values.
    ggml_backend_buffer_clear(buffer_, 0);
}

KvCache::~KvCache() {
    if (buffer_) ggml_backend_buffer_free(buffer_);
    if (ctx_) ggml_free(ctx_);
}

void copy_rows(const KvCache &from, int from_row, KvCache &to, int to_row, int n_rows, int n_positions) {
    if (from.type() != to.type() || from.k(0)->ne[0] != to.k(0)->ne[0])
        fail("T3 KV cache copy: the caches differ in type or width");
    if (n_rows < 0 || n_positions < 0 || from_row < 0 || to_row < 0 || from_row + n_rows > from.n_rows() ||
        to_row + n_rows > to.n_rows() || n_positions > from.capacity() || n_positions > to.capacity())
        fail("T3 KV cache copy: rows [", from_row, ", ", from_row + n_rows, ") -> [", to_row, ", ", to_row + n_rows,
             ") x ", n_positions, " positions do not fit caches of ", from.n_rows(), " x ", from.capacity(), " and ",
             to.n_rows(), " x ", to.capacity());
    std::vector<uint8_t> staging; // a row's positions; through the host, which every backend allows
    for (int l = 0; l < from.n_layers(); ++l)
        for (int kv = 0; kv < 2; ++kv) {
            const ggml_tensor *src = kv == 0 ? from.k(l) : from.v(l);
            ggml_tensor *dst = kv == 0 ? to.k(l) : to.v(l);
            const size_t bytes = size_t(n_positions) * src->nb[1];
            staging.resize(bytes);
            for (int r = 0; r < n_rows; ++r) {
                ggml_backend_tensor_get(src, staging.data(), size_t(from_row + r) * src->nb[2], bytes);
                ggml_backend_tensor_set(dst, staging.data(), size_t(to_row + r) * dst->nb[2], bytes);
            }
        }
}

size_t KvPrefix::bytes() const {
    size_t total = 0;
    for (size_t l = 0; l < k.size(); ++l) total += k[l].size() + v[l].size();
    return total;
}

KvPrefix export_prefix(const KvCache &cache, int row, int length) {
    if (row < 0 || row >= cache.n_rows() || length < 1 || length > cache.capacity())
        fail("T3 KV prefix: row ", row, " x ", length, " positions are outside the cache of ", cache.n_rows(), " x ",
             cache.capacity());
    KvPrefix prefix;
    prefix.length = length;
    prefix.type = cache.type();
    for (int l = 0; l < cache.n_layers(); ++l)
        for (ggml_tensor *t : {cache.k(l), cache.v(l)}) {
            std::vector<uint8_t> values(size_t(length) * t->nb[1]);
            ggml_backend_tensor_get(t, values.data(), size_t(row) * t->nb[2], values.size());
            (t == cache.k(l) ? prefix.k : prefix.v).push_back(std::move(values));
        }
    return prefix;
}

void import_prefix(KvCache &cache, const KvPrefix &prefix) {
    if (prefix.type != cache.type() || int(prefix.k.size()) != cache.n_layers() ||
        int(prefix.v.size()) != cache.n_layers() || prefix.length > cache.capacity())
        fail("T3 KV prefix: a prefix of ", prefix.length, " positions (", ggml_type_name(prefix.type), ", ",
             prefix.k.size(), " layers) does not fit this cache (", ggml_type_name(cache.type()), ", ",
             cache.n_layers(), " layers, ", cache.capacity(), " positions)");
    for (int l = 0; l < cache.n_layers(); ++l)
        for (int kv = 0; kv < 2; ++kv) {
            ggml_tensor *t = kv == 0 ? cache.k(l) : cache.v(l);
            const std::vector<uint8_t> &values = (kv == 0 ? prefix.k : prefix.v)[size_t(l)];
            if (values.size() != size_t(prefix.length) * t->nb[1]) fail("T3 KV prefix: layer ", l, " has a bad size");
            for (int r = 0; r < cache.n_rows(); ++r)
                ggml_backend_tensor_set(t, values.data(), size_t(r) * t->nb[2], values.size());
        }
}

size_t KvCache::bytes() const { return buffer_ ? ggml_backend_buffer_get_size(buffer_) : 0; }

} // namespace chatterbox::t3
