#include "models/chatterbox/t3/session.h"

#include "core/error.h"

#include "ggml-backend.h"

#include <algorithm>
#include <numeric>

namespace chatterbox::t3 {

namespace {

int round_up(int value, int step) { return (value + step - 1) / step * step; }

constexpr size_t kMaxGraphNodes = 8192; // 30 layers need about 1100

} // namespace

struct T3Session::Graph {
    std::unique_ptr<GraphRunner> runner;
    BackboneInputs in;
    ggml_tensor *last_index = nullptr; // prefill only: i32 (n_rows, 1), the position whose logits are wanted
    ggml_tensor *logits = nullptr;     // (n_rows, 1, speech_vocab)
    AttentionWatch watch;              // the watched heads' graph (empty for a plain graph)
    int visible = 0;                   // decode only: the mask lets the query see cache positions [0, visible)
};

int decode_attended_positions(int length, const RuntimeOptions &options, int capacity) {
    return std::min(round_up(length + 1, options.decode_bucket), capacity);
}

nn::AttentionPath graph_attention_path(const RuntimeOptions &options, const Backend &backend) {
    return options.attention == nn::AttentionPath::flash && backend.is_cpu() ? nn::AttentionPath::single_query
                                                                             : options.attention;
}

T3Session::T3Session(const T3Model &model, Backend &backend, RuntimeOptions options)
    : model_(model), backend_(backend), options_(options) {
    if (options_.prefill_bucket < 1 || options_.decode_bucket < 1 || options_.capacity_step < 1)
        fail("T3 session: prefill_bucket, decode_bucket and capacity_step must be >= 1");
}

T3Session::~T3Session() {
    // Graphs reference the cache tensors: release them first.
    for (int w = 0; w < 2; ++w) {
        prefill_graphs_[w].clear();
        decode_graphs_[w].clear();
    }
    cache_.reset();
}

void T3Session::ensure_cache(int n_rows, int positions) {
    if (cache_ && cache_->n_rows() == n_rows && cache_->capacity() >= positions) return;
    for (int w = 0; w < 2; ++w) {
        prefill_graphs_[w].clear();
        decode_graphs_[w].clear();
    }
    cache_.reset();
    cache_ = std::make_unique<KvCache>(backend_, model_.hparams(), n_rows, round_up(positions, options_.capacity_step),
                                       options_.kv_type);
}

T3Session::Graph &T3Session::prefill_graph(int bucket, int n_kv, Backend &on) {
    auto &graphs = prefill_graphs_[watched_.empty() ? 0 : 1];
    const auto key = std::make_tuple(bucket, n_kv, &on);
    auto found = graphs.find(key);
    if (found != graphs.end()) return *found->second;
    auto g = std::make_unique<Graph>();
    g->runner = std::make_unique<GraphRunner>(on, kMaxGraphNodes);
    const int n_rows = cache_->n_rows();
    g->in = make_backbone_inputs(*g->runner, model_.hparams(), n_rows, bucket, n_kv);
    g->last_index = g->runner->input("t3.last_index", GGML_TYPE_I32, {n_rows, 1});
    ggml_context *ctx = g->runner->ctx();
    watch(*g);
    ggml_tensor *hidden = build_decoder_layers(ctx, model_, *cache_, g->in, graph_attention_path(options_, on));
    g->logits = build_speech_logits(ctx, model_, ggml_get_rows(ctx, hidden, g->last_index));
    build(*g);
    ++graphs_built_;
    return *graphs.emplace(key, std::move(g)).first->second;
}

T3Session::Graph &T3Session::decode_graph(int n_kv) {
    auto &graphs = decode_graphs_[watched_.empty() ? 0 : 1];
    auto found = graphs.find(n_kv);
    if (found != graphs.end()) return *found->second;
    auto g = std::make_unique<Graph>();
    g->runner = std::make_unique<GraphRunner>(backend_, kMaxGraphNodes);
    g->in = make_backbone_inputs(*g->runner, model_.hparams(), cache_->n_rows(), 1, n_kv);
    ggml_context *ctx = g->runner->ctx();
    watch(*g);
    g->logits = build_speech_logits(
        ctx, model_, build_decoder_layers(ctx, model_, *cache_, g->in, graph_attention_path(options_, backend_)));
    build(*g);
    ++graphs_built_;
    return *graphs.emplace(n_kv, std::move(g)).first->second;
}

void T3Session::watch(Graph &graph) const {
    if (watched_.empty()) return;
    graph.watch.heads = watched_;
    graph.in.watch = &graph.watch;
}

void T3Session::build(Graph &graph) const {
    if (graph.watch.mean)
        graph.runner->build({graph.logits, graph.watch.mean});
    else
        graph.runner->build({graph.logits});
}

void T3Session::watch_heads(const std::vector<AttentionHead> &heads) {
    const HParams &hp = model_.hparams();
    for (const AttentionHead &h : heads)
        if (h.layer < 0 || h.layer >= hp.n_layers || h.head < 0 || h.head >= hp.n_heads)
            fail("T3 session: attention head (", h.layer, ", ", h.head, ") is outside the backbone's ", hp.n_layers,
                 " layers x ", hp.n_heads, " heads");
    const bool same = heads.size() == watched_.size() &&
                      std::equal(heads.begin(), heads.end(), watched_.begin(),
                                 [](const auto &a, const auto &b) { return a.layer == b.layer && a.head == b.head; });
    if (same) return;
    prefill_graphs_[1].clear(); // built for other heads
    decode_graphs_[1].clear();
    watched_ = heads;
    attention_ = {};
}

// Lets a decode graph's query see cache positions [0, visible). The mask still shows what the
// graph's previous step saw, so a step normally unmasks one position; a graph's first step, or its
// first after a prefill, writes the whole mask.
void T3Session::show_positions(Graph &decode, int visible) {
    if (visible == decode.visible + 1) {
        const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f);
        ggml_backend_tensor_set(decode.in.mask, &zero, size_t(decode.visible) * sizeof(zero), sizeof(zero));
    } else {
        const std::vector<ggml_fp16_t> mask = causal_mask(1, decode.in.n_kv, visible - 1);
        decode.runner->set_input(decode.in.mask, mask.data(), mask.size() * sizeof(ggml_fp16_t));
    }
    decode.visible = visible;
}

std::vector<float> T3Session::run(Graph &graph) {
    graph.runner->compute();
    if (graph.watch.mean) {
        attention_.row_length = int(graph.watch.mean->ne[0]);
        attention_.rows = int(graph.watch.mean->ne[1]);
        attention_.values = graph.runner->read_f32(graph.watch.mean);
    } else {
        attention_ = {};
    }
    return graph.runner->read_f32(graph.logits);
}

std::vector<float> T3Session::prefill(const std::vector<float> &embeds, int n_rows, int length, int max_new_tokens,
                                      const KvPrefix *prefix) {
    begin_prefill(n_rows, length, max_new_tokens, prefix);
    return prefill_part(embeds, last_part());
}

int T3Session::last_part() const { return round_up(prefill_length_ - length_, options_.prefill_bucket); }

void T3Session::begin_prefill(int n_rows, int length, int max_new_tokens, const KvPrefix *prefix) {
    length_ = prefill_length_ = 0; // no sequence until this one is set up
    if (n_rows < 1 || length < 1 || max_new_tokens < 0)
        fail("T3 prefill: invalid request of ", n_rows, " rows x ", length, " tokens + ", max_new_tokens, " new");
    const int max_sequence = model_.hparams().max_sequence();
    if (max_sequence > 0 && length > max_sequence)
        fail("T3 prefill: ", length, " tokens exceed the model's ", max_sequence, " positions");
    const int first = prefix ? prefix->length : 0; // the positions taken from the prefix
    if (prefix && (first >= length || !watched_.empty()))
        fail("T3 prefill: a prefix of ", first, " positions for ", length,
             " (it must leave one to compute, with no heads watched)");
    // The padding of a whole prefill has cache slots too (a part's past the capacity is cut).
    const int n_kv = round_up(length, options_.prefill_bucket); // the keys a prefill attends to
    ensure_cache(n_rows,
                 std::max({n_kv, first + round_up(length - first, options_.prefill_bucket), length + max_new_tokens}));
    if (prefix) import_prefix(*cache_, *prefix);
    length_ = first;
    prefill_length_ = length;
}

std::vector<float> T3Session::prefill_part(const std::vector<float> &embeds, int part, Backend *on) {
    if (!prefilling()) fail("T3 prefill: no prefill begun and unfinished");
    const size_t hidden = size_t(model_.hparams().hidden);
    const int n_rows = cache_->n_rows(), length = prefill_length_, first = length_;
    if (embeds.size() != size_t(n_rows) * size_t(length) * hidden)
        fail("T3 prefill: ", embeds.size(), " embedding values, expected ", n_rows, " x ", length, " x ", hidden);
    const int computed = std::min(part, length - first);
    if (part < 1 || (!watched_.empty() && (computed < length - first || (on && on != &backend_))))
        fail("T3 prefill: a part of ", part,
             " positions (at least 1, and all of them on the session's backend while heads are watched)");
    const int bucket = std::min(part, cache_->capacity() - first);
    // The keys attended: as many as a whole prefill of the sequence attends to, whatever the part (the
    // padding queries past them see fewer, which nothing reads).
    const int n_kv = round_up(length, options_.prefill_bucket);
    Graph &g = prefill_graph(bucket, n_kv, on ? *on : backend_);

    // Rows padded with zeros to the bucket; the padding's keys land in cache slots that later parts
    // or decoding overwrite before any query may see them.
    std::vector<float> padded(size_t(n_rows) * size_t(bucket) * hidden, 0.0f);
    for (int r = 0; r < n_rows; ++r)
        std::copy_n(embeds.begin() + std::ptrdiff_t((size_t(r) * size_t(length) + size_t(first)) * hidden),
                    size_t(computed) * hidden, padded.begin() + std::ptrdiff_t(size_t(r) * size_t(bucket) * hidden));
    std::vector<int32_t> positions(static_cast<size_t>(bucket));
    std::iota(positions.begin(), positions.end(), first);
    const std::vector<int64_t> slots(positions.begin(), positions.end());
    // Padding past a bounded position table (GPT-2's wpe) takes its last row: never attended to.
    const int max_sequence = model_.hparams().max_sequence();
    if (max_sequence > 0)
        for (int32_t &p : positions) p = std::min(p, max_sequence - 1);
    const std::vector<ggml_fp16_t> mask = causal_mask(bucket, n_kv, first);
    g.runner->set_input(g.in.embeds, padded);
    g.runner->set_input(g.in.positions, positions);
    g.runner->set_input(g.in.cache_slots, slots.data(), slots.size() * sizeof(int64_t));
    g.runner->set_input(g.in.mask, mask.data(), mask.size() * sizeof(ggml_fp16_t));
    g.runner->set_input(g.last_index, std::vector<int32_t>(size_t(n_rows), computed - 1));
    std::vector<float> logits = run(g);
    length_ = first + computed;
    if (prefilling()) return {};
    return logits;
}

KvPrefix T3Session::export_prefix(int length) const {
    if (!cache_ || length > length_) fail("T3 session: no sequence of ", length, " positions to export");
    return t3::export_prefix(*cache_, 0, length);
}

std::vector<float> T3Session::decode(const std::vector<float> &embed) {
    const size_t hidden = size_t(model_.hparams().hidden);
    if (!cache_ || length_ == 0 || prefilling()) fail("T3 decode: no prefill has completed a sequence");
    if (embed.size() != hidden) fail("T3 decode: embedding of ", embed.size(), " values, expected ", hidden);
    if (model_.hparams().max_sequence() > 0 && length_ >= model_.hparams().max_sequence())
        fail("T3 decode: the sequence is at the model's ", model_.hparams().max_sequence(), " positions");
    if (length_ >= cache_->capacity())
        fail("T3 decode: the KV cache is full (", cache_->capacity(),
             " positions); reserve more new tokens at prefill");
    Graph &g = decode_graph(decode_attended_positions(length_, options_, cache_->capacity()));
    // Every row gets the same token at the same position.
    const size_t row_bytes = hidden * sizeof(float);
    for (int r = 0; r < cache_->n_rows(); ++r)
        ggml_backend_tensor_set(g.in.embeds, embed.data(), size_t(r) * row_bytes, row_bytes);
    const int64_t slot = length_;
    g.runner->set_input(g.in.positions, &length_, sizeof(length_));
    g.runner->set_input(g.in.cache_slots, &slot, sizeof(slot));
    show_positions(g, length_ + 1);
    std::vector<float> logits = run(g);
    ++length_;
    return logits;
}

} // namespace chatterbox::t3
