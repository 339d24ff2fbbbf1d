#pragma once
// The backbone's key/value cache in backend memory: per layer one K and one V tensor of
// (n_rows, capacity, hidden) in PyTorch order (ggml ne = {hidden, capacity, n_rows}); row r of
// position p holds all heads of that token. Graphs write new tokens with ggml_set_rows and read
// views, so nothing is copied or reallocated per step.

#include "core/backend.h"
#include "models/chatterbox/t3/hparams.h"

#include "ggml.h"

#include <vector>

namespace chatterbox::t3 {

class KvCache {
  public:
    // type: GGML_TYPE_F32 or GGML_TYPE_F16.
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

// Copies cache positions [0, n_positions) of rows [from_row, from_row + n_rows) of `from` to the same
// positions of rows [to_row, to_row + n_rows) of `to` (the same cache too), every layer: a prefilled
// sequence joining a batch, or a batch closing a gap. The caches must be of one model and type.
void copy_rows(const KvCache &from, int from_row, KvCache &to, int to_row, int n_rows, int n_positions);

} // namespace chatterbox::t3
