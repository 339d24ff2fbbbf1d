#pragma once
// Voice prefix reuse: the conditioning embeddings (speaker, perceiver or prompt, emotion) open
// every T3 prefill, and their keys/values depend on them alone (causal attention; both CFG rows
// share them). The cache keeps them per conditioning, computed once by a one-row prefill of the
// conditioning, so a request with a cached voice prefills only its text and BOS. Thread-safe, least
// recently used entries go first.

#include "models/chatterbox/t3/cond_encoder.h"
#include "models/chatterbox/t3/kv_cache.h"
#include "models/chatterbox/t3/session.h"

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>

namespace chatterbox::t3 {

class PrefixCache {
  public:
    explicit PrefixCache(size_t max_entries);

    // The prefix of cond for sessions like `session` (its KV type), computed on it when missing
    // (which starts a new sequence there).
    std::shared_ptr<const KvPrefix> get(T3Session &session, const CondEmbeddings &cond);

    uint64_t hits() const { return hits_; }
    uint64_t misses() const { return misses_; }
    size_t entries() const;

  private:
    struct Entry {
        ggml_type type;
        std::vector<float> cond; // the key: the conditioning embeddings, compared exactly
        std::shared_ptr<const KvPrefix> prefix;
    };
    size_t max_entries_;
    mutable std::mutex mutex_;
    std::list<Entry> entries_; // most recently used first
    std::atomic<uint64_t> hits_{0}, misses_{0};
};

} // namespace chatterbox::t3
