#pragma once
// Per-request T3 state: the KV cache and the persistent graphs that use it. A prefill graph is
// built once per length bucket and a decode-step graph once per attended length (the positions in
// use rounded up to decode_bucket), so a step reads only the keys/values of that length, not of the
// whole cache. Every step only writes the inputs (embedding, position, cache slot, one mask entry)
// and computes on the session's own backend. Many sessions can share one T3Model.

#include "models/chatterbox/t3/backbone.h"
#include "models/chatterbox/t3/kv_cache.h"
#include "models/chatterbox/t3/model.h"

#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

namespace chatterbox::t3 {

struct RuntimeOptions {
    nn::AttentionPath attention = nn::AttentionPath::flash;
    // f16 (fast), f32 (exact, for checking) or q8_0 (CPU only: half f16's memory; lossy; bench/README.md
    // "AMD EPYC Zen 4 VM")
    ggml_type kv_type = GGML_TYPE_F16;
    int prefill_bucket = 32; // prefill graphs exist per multiple of this many tokens
    // Decode graphs attend over the positions in use rounded up to a multiple of this (at most the
    // cache capacity). With a multiple of 32 the CPU logits equal those over the whole cache: masked
    // positions add exact zeros in the same SIMD lanes, or are skipped by flash attention (which
    // splits one row over 512+ positions between the threads by length, so that case may round apart).
    int decode_bucket = 64;
    int capacity_step = 256; // the KV cache grows in multiples of this many positions
};

// The cache positions a decode step attends to when `length` are in use: one more (the new token),
// rounded up to options.decode_bucket, at most capacity. Sessions and batches use the same graphs' sizes.
int decode_attended_positions(int length, const RuntimeOptions &options, int capacity);

// The attention path of a graph, prefill or decode: on a CPU backend, flash becomes single_query
// (kernels/single_query_attention.h: a decode step 3-8x faster than ggml's flash attention; each
// query of a prefill on its own, in f32, so a position gets the same bits in a whole prefill, after a
// voice prefix or in a batch's prefill parts, where ggml's flash kernel rounds by the number of
// queries); any other choice, or another backend, is kept.
nn::AttentionPath graph_attention_path(const RuntimeOptions &options, const Backend &backend);

class T3Session {
  public:
    // backend: where this session's cache lives and its graphs run (one per session).
    T3Session(const T3Model &model, Backend &backend, RuntimeOptions options = {});
    ~T3Session();
    T3Session(const T3Session &) = delete;
    T3Session &operator=(const T3Session &) = delete;

    // Starts a new sequence from embeds (n_rows, length, hidden), row-major, keeping room in the cache
    // for max_new_tokens more tokens. Returns the logits at the last position, (n_rows, speech_vocab).
    // With a prefix (the keys/values of the first prefix->length positions, the same for every row,
    // as export_prefix gives them) only the positions after it are computed; not while heads are watched.
    std::vector<float> prefill(const std::vector<float> &embeds, int n_rows, int length, int max_new_tokens,
                               const KvPrefix *prefix = nullptr);
    // The same prefill in parts, so that a batch can run its steps between them: begin_prefill starts
    // the sequence (cache, prefix) without computing; each prefill_part computes the next `part`
    // positions of embeds (as given to prefill; the last part padded to `part`) and returns the logits
    // at the last position from the part that completes the sequence, nothing before. Every part's
    // queries attend to the keys and mask of the whole prefill, so the logits are prefill()'s (bit for
    // bit on the CPU). `on` computes the part (another backend of the same device, e.g. a batch's, so
    // that its steps and the parts share one pool of threads; nullptr: the session's; its graphs are
    // kept, so it must outlive the session, as an engine's batch outlives its sessions). With heads
    // watched, one part on the session's backend must take every position.
    void begin_prefill(int n_rows, int length, int max_new_tokens, const KvPrefix *prefix = nullptr);
    std::vector<float> prefill_part(const std::vector<float> &embeds, int part, Backend *on = nullptr);
    bool prefilling() const { return length_ < prefill_length_; } // begun and not complete
    // The part that computes every position left at once, padded as prefill() pads a whole prefill.
    int last_part() const;
    // The first `length` positions of row 0 of the sequence so far.
    KvPrefix export_prefix(int length) const;
    // Feeds one token embedding (hidden) to every row at the next position; returns (n_rows, speech_vocab).
    std::vector<float> decode(const std::vector<float> &embed);

    // Alignment analyzer support: from the next prefill on, every step also computes the mean
    // attention probabilities of these heads on row 0 (graphs of their own, built once; the other
    // heads and the graphs without watched heads keep the fast path). Empty: watch nothing.
    // Throws Error for a head outside the backbone.
    void watch_heads(const std::vector<AttentionHead> &heads);
    // The watched heads' mean attention of the last prefill or decode, rows of row_length key
    // positions (the prefill's rows 0 .. length - 1 over its keys; a decode step's one row over
    // the attended positions, zeros past the sequence). Empty when nothing is watched.
    struct AttentionRows {
        int rows = 0, row_length = 0;
        std::vector<float> values;
        const float *row(int r) const { return values.data() + size_t(r) * size_t(row_length); }
    };
    const AttentionRows &watched_attention() const { return attention_; }

    int length() const { return length_; } // positions computed in the cache
    int capacity() const { return cache_ ? cache_->capacity() : 0; }
    int n_rows() const { return cache_ ? cache_->n_rows() : 0; }
    // The cache of the sequence so far (nullptr before the first prefill): a batch copies it on joining.
    const KvCache *cache() const { return cache_.get(); }
    const T3Model &model() const { return model_; }
    Backend &backend() const { return backend_; }
    const RuntimeOptions &options() const { return options_; }
    // Graphs built so far (prefill and decode buckets), to check that steps do not rebuild.
    int graphs_built() const { return graphs_built_; }

  private:
    struct Graph;
    void ensure_cache(int n_rows, int positions);
    Graph &prefill_graph(int bucket, int n_kv, Backend &on);
    Graph &decode_graph(int n_kv);
    void show_positions(Graph &decode, int visible);
    void watch(Graph &graph) const; // before the layers are built: the watched heads join the graph
    void build(Graph &graph) const;
    std::vector<float> run(Graph &graph);

    const T3Model &model_;
    Backend &backend_;
    RuntimeOptions options_;
    std::unique_ptr<KvCache> cache_;
    // [0]: plain graphs, [1]: with the watched heads.
    // By (bucket length, attended positions, the backend that computes them).
    std::map<std::tuple<int, int, const Backend *>, std::unique_ptr<Graph>> prefill_graphs_[2];
    std::map<int, std::unique_ptr<Graph>> decode_graphs_[2]; // by attended positions
    std::vector<AttentionHead> watched_;
    AttentionRows attention_;
    int length_ = 0;
    int prefill_length_ = 0; // the positions of the prefill begun last
    int graphs_built_ = 0;
};

} // namespace chatterbox::t3
