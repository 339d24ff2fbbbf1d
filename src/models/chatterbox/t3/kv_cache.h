#pragma once
// The backbone's key/value cache in backend memory: per layer one K and one V tensor of
// (n_rows, capacity, hidden) in PyTorch order (ggml ne = {hidden, capacity, n_rows}); row r of
// position p holds all heads of that token. Graphs write new tokens with ggml_set_rows and read
// views, so nothing is copied or reallocated per step.

#include "core/backend.h"
#include "models/chatterbox/t3/hparams.h"

#include "ggml.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox::t3 {

// A cache type by the name a user gives it: "f16", "q8_0" or "f32" (ggml's names); throws
// InvalidArgument for any other.
ggml_type kv_cache_type(const std::string &name);

class KvCache {
  public:
    // type: GGML_TYPE_F32, GGML_TYPE_F16, or GGML_TYPE_Q8_0 (half f16's bytes, a scale per 32 values:
    // lossy; CPU backend and the single-query attention path only).
    KvCache(Backend &backend, const HParams &hp, int n_rows, int capacity, ggml_type type);
    ~KvCache();
    KvCache(const KvCache &) = delete;
    KvCache &operator=(const KvCache &) = delete;

    ggml_tensor *k(int layer) const { return k_[size_t(layer)]; }
    ggml_tensor *v(int layer) const { return v_[size_t(layer)]; }
    int n_rows() const { return n_rows_; }
    int n_layers() const { return int(k_.size()); }
    int capacity() const { return capacity_; }
    ggml_type type() const { return type_; }
    size_t bytes() const;

  private:
    int n_rows_;
    int capacity_;
    ggml_type type_;
    ggml_context *ctx_ = nullptr;
    ggml_backend_buffer_t buffer_ = nullptr;
    std::vector<ggml_tensor *> k_, v_;
};

// The keys and values of a sequence's first positions on the host, taken from one row of a cache
// and put into every row of another: a voice's conditioning prefix, computed once and reused.
struct KvPrefix {
    int length = 0;
    ggml_type type = GGML_TYPE_F16;
    std::vector<std::vector<uint8_t>> k, v; // per layer: length x hidden values
    size_t bytes() const;
};
KvPrefix export_prefix(const KvCache &cache, int row, int length);
// Into every row of cache (same model and type, length within its capacity).
void import_prefix(KvCache &cache, const KvPrefix &prefix);

// Copies cache positions [0, n_positions) of rows [from_row, from_row + n_rows) of `from` to the same
// positions of rows [to_row, to_row + n_rows) of `to` (the same cache too), every layer: a prefilled
// sequence joining a batch, or a batch closing a gap. The caches must be of one model and type.
void copy_rows(const KvCache &from, int from_row, KvCache &to, int to_row, int n_rows, int n_positions);

} // namespace chatterbox::t3
