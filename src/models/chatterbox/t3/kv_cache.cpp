#include "models/chatterbox/t3/kv_cache.h"

#include "core/error.h"

#include "ggml-backend.h"

#include <string>

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

size_t KvCache::bytes() const { return buffer_ ? ggml_backend_buffer_get_size(buffer_) : 0; }

} // namespace chatterbox::t3
