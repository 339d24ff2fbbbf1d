#include "models/chatterbox/t3/batch_decoder.h"

#include "core/error.h"

#include <algorithm>

namespace chatterbox::t3 {

namespace {

constexpr size_t kMaxGraphNodes = 8192;
// Decode graphs kept, by (rows, attended positions); past this many the oldest set is dropped
// (each holds its own compute buffer).
constexpr size_t kMaxGraphs = 64;

} // namespace

struct T3BatchDecoder::Graph {
    std::unique_ptr<GraphRunner> runner;
    BackboneInputs in;
    ggml_tensor *logits = nullptr; // (n_rows, 1, speech_vocab)
};

T3BatchDecoder::T3BatchDecoder(const T3Model &model, Backend &backend, int max_rows, int capacity,
                               RuntimeOptions options)
    : model_(model), backend_(backend), options_(options), max_rows_(max_rows), capacity_(capacity) {
    if (max_rows < 1 || capacity < 1 || options.decode_bucket < 1)
        fail("T3 batch: invalid size ", max_rows, " rows x ", capacity, " positions (decode bucket ",
             options.decode_bucket, ")");
    const int max_sequence = model.hparams().max_sequence();
    if (max_sequence > 0) capacity_ = std::min(capacity_, max_sequence);
    cache_ = std::make_unique<KvCache>(backend, model.hparams(), max_rows_, capacity_, options.kv_type);
}

T3BatchDecoder::~T3BatchDecoder() {
    graphs_.clear(); // they reference the cache tensors
    cache_.reset();
}

int T3BatchDecoder::rows_in_use() const {
    return sequences_.empty() ? 0 : sequences_.back().row + sequences_.back().n_rows;
}

T3BatchDecoder::Sequence &T3BatchDecoder::find(int handle) {
    return const_cast<Sequence &>(std::as_const(*this).find(handle));
}

const T3BatchDecoder::Sequence &T3BatchDecoder::find(int handle) const {
    for (const Sequence &s : sequences_)
        if (s.handle == handle) return s;
    fail("T3 batch: no sequence ", handle);
}

int T3BatchDecoder::length(int handle) const { return find(handle).length; }

int T3BatchDecoder::join(const T3Session &prefilled, int positions) {
    const KvCache *from = prefilled.cache();
    if (!from || prefilled.length() == 0) fail("T3 batch: the session has no prefilled sequence");
    const int n_rows = from->n_rows();
    if (!fits(n_rows, positions) || positions < prefilled.length())
        fail("T3 batch: a sequence of ", n_rows, " rows x ", positions, " positions does not fit ", max_rows_,
             " rows x ", capacity_);
    if (!has_room(n_rows)) fail("T3 batch: no room for ", n_rows, " more rows");
    if (from->type() != cache_->type()) fail("T3 batch: the session's KV cache type differs from the batch's");
    Sequence s;
    s.handle = next_handle_++;
    s.row = rows_in_use();
    s.n_rows = n_rows;
    s.length = prefilled.length();
    s.positions = positions;
    copy_rows(*from, 0, *cache_, s.row, n_rows, s.length);
    sequences_.push_back(s);
    return s.handle;
}

void T3BatchDecoder::leave(int handle) {
    auto it = std::find_if(sequences_.begin(), sequences_.end(), [&](const Sequence &s) { return s.handle == handle; });
    if (it == sequences_.end()) fail("T3 batch: no sequence ", handle);
    // Close the gap, so the rows in use stay the first ones: the last sequence moves into it if it has
    // as many rows (one sequence's cache copied, however many follow), else every later one moves up.
    const Sequence last = sequences_.back();
    if (last.handle != handle && last.n_rows == it->n_rows) {
        copy_rows(*cache_, last.row, *cache_, it->row, last.n_rows, last.length);
        const int row = it->row;
        *it = last;
        it->row = row;
        sequences_.pop_back();
        return;
    }
    int row = it->row;
    it = sequences_.erase(it);
    for (; it != sequences_.end(); ++it) {
        copy_rows(*cache_, it->row, *cache_, row, it->n_rows, it->length);
        it->row = row;
        row += it->n_rows;
    }
}

T3BatchDecoder::Graph &T3BatchDecoder::decode_graph(int n_rows, int n_kv) {
    const auto key = std::make_pair(n_rows, n_kv);
    auto found = graphs_.find(key);
    if (found != graphs_.end()) return *found->second;
    if (graphs_.size() >= kMaxGraphs) graphs_.clear();
    auto g = std::make_unique<Graph>();
    g->runner = std::make_unique<GraphRunner>(backend_, kMaxGraphNodes);
    g->in = make_batch_decode_inputs(*g->runner, model_.hparams(), n_rows, n_kv);
    ggml_context *ctx = g->runner->ctx();
    g->logits = build_speech_logits(
        ctx, model_, build_decoder_layers(ctx, model_, *cache_, g->in, graph_attention_path(options_, backend_)));
    g->runner->build({g->logits});
    ++graphs_built_;
    return *graphs_.emplace(key, std::move(g)).first->second;
}

std::vector<std::vector<float>> T3BatchDecoder::decode(const std::vector<Step> &steps) {
    const HParams &hp = model_.hparams();
    const size_t hidden = size_t(hp.hidden), vocab = size_t(hp.speech_vocab);
    if (steps.size() != sequences_.size())
        fail("T3 batch decode: ", steps.size(), " inputs for ", sequences_.size(), " sequences");
    std::vector<const Step *> by_row(sequences_.size(), nullptr);
    int n_kv = 0;
    for (const Step &step : steps) {
        const Sequence &s = find(step.handle);
        const size_t index = size_t(&s - sequences_.data());
        if (by_row[index]) fail("T3 batch decode: sequence ", step.handle, " has two inputs");
        if (step.embed.size() != hidden)
            fail("T3 batch decode: embedding of ", step.embed.size(), " values, expected ", hidden);
        if (s.length >= s.positions)
            fail("T3 batch decode: sequence ", s.handle, " is at its ", s.positions, " reserved positions");
        by_row[index] = &step;
        n_kv = std::max(n_kv, decode_attended_positions(s.length, options_, capacity_));
    }
    const int n_rows = rows_in_use();
    Graph &g = decode_graph(n_rows, n_kv);
    std::vector<float> embeds(size_t(n_rows) * hidden);
    std::vector<int32_t> positions(static_cast<size_t>(n_rows));
    std::vector<int64_t> slots(static_cast<size_t>(n_rows));
    std::vector<ggml_fp16_t> mask(size_t(n_rows) * size_t(n_kv));
    for (size_t i = 0; i < sequences_.size(); ++i) {
        const Sequence &s = sequences_[i];
        const std::vector<ggml_fp16_t> row_mask = causal_mask(1, n_kv, s.length); // sees [0, length]
        for (int r = s.row; r < s.row + s.n_rows; ++r) {
            std::copy(by_row[i]->embed.begin(), by_row[i]->embed.end(),
                      embeds.begin() + std::ptrdiff_t(size_t(r) * hidden));
            positions[size_t(r)] = s.length;
            slots[size_t(r)] = s.length;
            std::copy(row_mask.begin(), row_mask.end(), mask.begin() + std::ptrdiff_t(size_t(r) * size_t(n_kv)));
        }
    }
    g.runner->set_input(g.in.embeds, embeds);
    g.runner->set_input(g.in.positions, positions);
    g.runner->set_input(g.in.cache_slots, slots.data(), slots.size() * sizeof(int64_t));
    g.runner->set_input(g.in.mask, mask.data(), mask.size() * sizeof(ggml_fp16_t));
    g.runner->compute();
    const std::vector<float> logits = g.runner->read_f32(g.logits);
    std::vector<std::vector<float>> out;
    out.reserve(steps.size());
    for (const Step &step : steps) {
        Sequence &s = find(step.handle);
        const auto first = logits.begin() + std::ptrdiff_t(size_t(s.row) * vocab);
        out.emplace_back(first, first + std::ptrdiff_t(size_t(s.n_rows) * vocab));
    }
    for (Sequence &s : sequences_) ++s.length;
    return out;
}

} // namespace chatterbox::t3
