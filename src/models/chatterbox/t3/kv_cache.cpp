#include "models/chatterbox/t3/kv_cache.h"

#include "core/error.h"

#include "ggml-backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::t3 {

KvCache::KvCache(Backend &backend, const HParams &hp, int n_rows, int capacity, ggml_type type)
    : n_rows_(n_rows), capacity_(capacity), type_(type) {
    if (type != GGML_TYPE_F32 && type != GGML_TYPE_F16)
        fail("T3 KV cache: type ", ggml_type_name(type), " is not supported (f32 or f16)");
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

size_t KvCache::bytes() const { return buffer_ ? ggml_backend_buffer_get_size(buffer_) : 0; }

} // namespace chatterbox::t3
