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

} // namespace chatterbox::t3
