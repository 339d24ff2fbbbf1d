#pragma once
// Many T3 sequences decoded together: one KV cache of max_rows rows, each sequence owning
// consecutive rows (its CFG pair, or one row), and one decode graph per step for all of them, so
// every weight matrix is read once per step for the whole batch. Each row has its own position,
// cache slot and mask. Sequences join prefilled (their cache rows copied from the T3Session that
// prefilled them) and leave at any step; the rows in use stay packed at the front, so a step
// computes only those.

#include "models/chatterbox/t3/backbone.h"
#include "models/chatterbox/t3/kv_cache.h"
#include "models/chatterbox/t3/model.h"
#include "models/chatterbox/t3/session.h"

#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace chatterbox::t3 {

class T3BatchDecoder {
  public:
    // capacity: cache positions of every row (a sequence needs prefill + new tokens); options: the
    // attention path, KV type and decode bucket as for a T3Session (prefill_bucket is unused).
    T3BatchDecoder(const T3Model &model, Backend &backend, int max_rows, int capacity, RuntimeOptions options = {});
    ~T3BatchDecoder();
    T3BatchDecoder(const T3BatchDecoder &) = delete;
    T3BatchDecoder &operator=(const T3BatchDecoder &) = delete;

    // Whether a sequence of n_rows rows needing `positions` cache positions can ever join.
    bool fits(int n_rows, int positions) const { return n_rows <= max_rows_ && positions <= capacity_; }
    bool has_room(int n_rows) const { return rows_in_use() + n_rows <= max_rows_; }

    // Takes over the sequence `prefilled` holds (its rows and length; the session is not changed)
    // and reserves room for it to grow to `positions`. Returns its handle. Error when it does not fit now.
    int join(const T3Session &prefilled, int positions);
    void leave(int handle);

    struct Step {
        int handle = 0;
        std::vector<float> embed; // (hidden): the sequence's next input, the same for its rows
    };
    // One decode step of every joined sequence (each exactly once, any order): returns the logits
    // (n_rows, speech_vocab) of each, in the order of steps.
    std::vector<std::vector<float>> decode(const std::vector<Step> &steps);

    int sequences() const { return int(sequences_.size()); }
    int rows_in_use() const;
    int max_rows() const { return max_rows_; }
    int capacity() const { return capacity_; }
    int length(int handle) const; // the positions the sequence has in the cache
    int graphs_built() const { return graphs_built_; }

  private:
    struct Sequence {
        int handle = 0, row = 0, n_rows = 0, length = 0, positions = 0;
    };
    struct Graph;
    Graph &decode_graph(int n_rows, int n_kv);
    Sequence &find(int handle);
    const Sequence &find(int handle) const;

    const T3Model &model_;
    Backend &backend_;
    RuntimeOptions options_;
    int max_rows_, capacity_;
    std::unique_ptr<KvCache> cache_;
    std::vector<Sequence> sequences_;                              // by row
    std::map<std::pair<int, int>, std::unique_ptr<Graph>> graphs_; // by (rows, attended positions)
    int next_handle_ = 0;
    int graphs_built_ = 0;
};

} // namespace chatterbox::t3
