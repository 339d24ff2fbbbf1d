#include "models/chatterbox/s3tokenizer/s3tokenizer.h"

#include "audio/features.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/weight_store.h"
#include "kernels/onednn.h"
#include "modules/activations.h"
#include "modules/attention.h"

#include <algorithm>
#include <cmath>

namespace chatterbox::s3tokenizer {

namespace {

constexpr int kFsmnKernel = 31;
constexpr float kRopeBase = 10000.0f;
constexpr float kFsqScale = 0.999f; // 0.9990000128746033 in the reference: the float32 value

ggml_tensor *transpose(ggml_context *ctx, ggml_tensor *x) {
    return ggml_cont(ctx, ggml_transpose(ctx, ggml_reshape_2d(ctx, x, x->ne[0], x->ne[1])));
}

// Turbo's checkpoint stores the buffers S3Tokenizer registers, its mel filterbank and STFT window
// (the English one does not). The front end computes them (audio::s3tokenizer_log_mel), so stored
// ones are only checked: a checkpoint made with other front-end constants is refused rather than
// tokenized with features it was not trained on. Tolerance: the float32 roundings of librosa's and
// torch's arithmetic, relative to the largest value.
void check_stored_constant(const WeightStore &store, const std::string &name, const std::vector<float> &computed,
                           double relative_tolerance) {
    const TensorView *stored = store.find(name);
    if (!stored) return;
    if (size_t(shape_numel(stored->shape)) != computed.size())
        fail("tensor ", name, " is ", shape_str(stored->shape), "; the S3Tokenizer front end computes ",
             computed.size(), " values");
    const std::vector<float> values = to_f32(*stored);
    double largest = 0, worst = 0;
    for (size_t i = 0; i < computed.size(); ++i) {
        largest = std::max(largest, double(std::fabs(computed[i])));
        const double error = std::fabs(double(values[i]) - computed[i]);
        worst = std::isnan(error) ? INFINITY : std::max(worst, error);
    }
    if (worst > relative_tolerance * largest)
        fail("tensor ", name, " differs from what the S3Tokenizer front end computes by up to ", worst,
             " (largest value ", largest, "): this engine supports only the official constants");
}

} // namespace

int64_t token_count(int64_t frames) { return ((frames + 1) / 2 + 1) / 2; }

std::vector<Window> sliding_windows(int64_t frames) {
    std::vector<Window> windows;
    if (frames <= kWindowFrames) return {Window{0, frames}};
    // Padded, length-masked windows in the reference compute exactly what an unpadded window does:
    // every conv input, attention key and FSMN input past the length is masked to zero.
    for (int64_t start = 0; start < frames; start += kWindowStride)
        windows.push_back(Window{start, std::min(kWindowFrames, frames - start)});
    return windows;
}

std::vector<std::pair<int64_t, int64_t>> merged_ranges(const std::vector<int64_t> &window_tokens) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    const size_t n = window_tokens.size();
    for (size_t w = 0; w < n; ++w) {
        const int64_t count = window_tokens[w];
        if (n == 1) {
            ranges.emplace_back(0, count);
            continue;
        }
        const int64_t begin = w == 0 ? 0 : std::min(kOverlapTokens, count);
        const int64_t end = w + 1 == n ? count : std::max<int64_t>(0, count - kOverlapTokens);
        ranges.emplace_back(begin, std::max(begin, end));
    }
    return ranges;
}

int32_t fsq_token(const float *projection) {
    int32_t token = 0, power = 1;
    for (int64_t i = 0; i < kFsqDims; ++i) {
        // torch.round: half to even, as std::nearbyint in the default rounding mode.
        const float digit = std::nearbyint(std::tanh(projection[i]) * kFsqScale) + 1.0f;
        token += int32_t(digit) * power;
        power *= 3;
    }
    return token;
}

AttentionBlock::AttentionBlock(ModuleWeights &w, const std::string &prefix, const S3TokenizerHParams &hp)
    : attn_ln(w, prefix + ".attn_ln", hp.state, 1e-6f), mlp_ln(w, prefix + ".mlp_ln", hp.state, 1e-5f),
      query(w, prefix + ".attn.query", hp.state, hp.state), key(w, prefix + ".attn.key", hp.state, hp.state, false),
      value(w, prefix + ".attn.value", hp.state, hp.state), out(w, prefix + ".attn.out", hp.state, hp.state),
      fsmn(w, prefix + ".attn.fsmn_block", hp.state, hp.state, kFsmnKernel,
           nn::ConvOptions().with_groups(int(hp.state)).with_padding(kFsmnKernel / 2).without_bias()),
      mlp(nn::Linear(w, prefix + ".mlp.0", hp.state, 4 * hp.state),
          nn::Linear(w, prefix + ".mlp.2", 4 * hp.state, hp.state), nn::Activation::gelu_erf, w.on_cpu()),
      state(hp.state), heads(hp.heads),
      attention_path(w.on_cpu() && kernels::onednn_available() ? nn::AttentionPath::blocked
                                                               : nn::AttentionPath::plain) {}

ggml_tensor *AttentionBlock::operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *positions) const {
    const int64_t frames = x->ne[1];
    const int64_t head_dim = state / heads;
    ggml_tensor *h = attn_ln(ctx, x);
    auto rope = [&](ggml_tensor *projected) {
        ggml_tensor *split = ggml_reshape_4d(ctx, projected, head_dim, heads, frames, 1);
        return ggml_rope_ext(ctx, split, positions, nullptr, int(head_dim), GGML_ROPE_TYPE_NEOX, 0, kRopeBase, 1.0f,
                             0.0f, 1.0f, 0.0f, 0.0f);
    };
    ggml_tensor *v = value(ctx, h); // [state, T, 1]
    ggml_tensor *q = rope(query(ctx, h));
    ggml_tensor *k = rope(key(ctx, h));
    nn::AttentionOptions options;
    options.path = attention_path;
    ggml_tensor *wv = nn::attention(ctx, q, k, ggml_reshape_4d(ctx, v, head_dim, heads, frames, 1), options);
    // FSMN memory: depthwise conv over time of the values, plus the values.
    ggml_tensor *v_time = transpose(ctx, v); // [T, state]
    ggml_tensor *memory = ggml_add(ctx, fsmn(ctx, ggml_reshape_3d(ctx, v_time, frames, state, 1)),
                                   ggml_reshape_3d(ctx, v_time, frames, state, 1));
    memory = ggml_reshape_3d(ctx, transpose(ctx, memory), state, frames, 1);
    x = ggml_add(ctx, x, ggml_add(ctx, out(ctx, wv), memory));
    return ggml_add(ctx, x, mlp(ctx, mlp_ln(ctx, x)));
}

S3Tokenizer::S3Tokenizer(const WeightStore &store, Backend &backend, const S3TokenizerHParams &hp,
                         const std::string &prefix)
    : hp_(hp), weights_(std::make_unique<ModuleWeights>(store, prefix, backend)) {
    hp_.validate();
    ModuleWeights &w = *weights_;
    conv1_ = nn::Conv1d(w, "encoder.conv1", kMelBins, hp_.state, 3, nn::ConvOptions().with_stride(2).with_padding(1));
    conv2_ = nn::Conv1d(w, "encoder.conv2", hp_.state, hp_.state, 3, nn::ConvOptions().with_stride(2).with_padding(1));
    for (int b = 0; b < hp_.layers; ++b) blocks_.emplace_back(w, "encoder.blocks." + std::to_string(b), hp_);
    project_down_ = nn::Linear(w, "quantizer._codebook.project_down", hp_.state, kFsqDims);
    check_stored_constant(store, prefix + "_mel_filters", audio::s3tokenizer_mel_filters().values, 1e-4);
    check_stored_constant(store, prefix + "window", audio::s3tokenizer_window(), 1e-6);
    w.ignore("_mel_filters"); // checked above; the front end computes its own
    w.ignore("window");
    w.load();
}

S3Tokenizer::~S3Tokenizer() = default;

std::vector<float> S3Tokenizer::project_window(Backend &backend, const std::vector<float> &mel, int64_t total,
                                               const Window &window) const {
    // (128, total) -> ggml [count, 128]: the window's frames of every bin.
    std::vector<float> input(size_t(kMelBins * window.frames));
    for (int64_t m = 0; m < kMelBins; ++m)
        std::copy_n(mel.begin() + m * total + window.start, window.frames, input.begin() + m * window.frames);
    const int64_t n_tokens = token_count(window.frames);

    GraphRunner graph(backend);
    ggml_context *ctx = graph.ctx();
    ggml_tensor *log_mel = graph.input("log_mel", GGML_TYPE_F32, {1, kMelBins, window.frames});
    ggml_tensor *positions = graph.input("positions", GGML_TYPE_I32, {n_tokens});
    ggml_tensor *x = nn::gelu_erf(ctx, conv1_(ctx, log_mel));
    x = nn::gelu_erf(ctx, conv2_(ctx, x)); // [T', state, 1]
    x = ggml_reshape_3d(ctx, transpose(ctx, x), hp_.state, n_tokens, 1);
    for (const AttentionBlock &block : blocks_) x = block(ctx, x, positions);
    ggml_tensor *projection = project_down_(ctx, x); // [8, T', 1]
    graph.build({projection});
    graph.set_input(log_mel, input);
    std::vector<int32_t> position_values(static_cast<size_t>(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) position_values[size_t(t)] = int32_t(t);
    graph.set_input(positions, position_values);
    graph.compute();
    return graph.read_f32(projection);
}

Tokens S3Tokenizer::tokenize(Backend &backend, const std::vector<float> &log_mel, int64_t frames,
                             int64_t max_len) const {
    if (frames < 1) fail("S3Tokenizer: the log-mel has ", frames, " frames, expected at least 1");
    if (int64_t(log_mel.size()) != kMelBins * frames)
        fail("S3Tokenizer: the log-mel has ", log_mel.size(), " values, expected ", kMelBins, " x frames ", frames,
             " = ", kMelBins * frames);
    if (max_len < 0) fail("S3Tokenizer: max_len ", max_len, " is negative (0: no limit)");
    const int64_t kept = max_len > 0 ? std::min(frames, 4 * max_len) : frames;
    if (kept > kMaxFrames)
        fail("S3Tokenizer: ", kept, " mel frames (", kept / 100.0, " s) exceed the limit of ", kMaxFrames, " (",
             kMaxFrames / 100, " s)");
    for (int64_t m = 0; m < kMelBins; ++m)
        for (int64_t t = 0; t < kept; ++t) {
            const float v = log_mel[size_t(m * frames + t)];
            if (!std::isfinite(v))
                fail("S3Tokenizer: log-mel value ", v, " at bin ", m, ", frame ", t, " is not finite");
        }

    const std::vector<Window> windows = sliding_windows(kept);
    std::vector<std::vector<float>> projections;
    std::vector<int64_t> counts;
    for (const Window &window : windows) {
        projections.push_back(project_window(backend, log_mel, frames, window));
        counts.push_back(token_count(window.frames));
    }
    const std::vector<std::pair<int64_t, int64_t>> ranges = merged_ranges(counts);
    Tokens result;
    for (size_t w = 0; w < windows.size(); ++w)
        result.projection.insert(result.projection.end(), projections[w].begin() + ranges[w].first * kFsqDims,
                                 projections[w].begin() + ranges[w].second * kFsqDims);
    const int64_t n_tokens = int64_t(result.projection.size()) / kFsqDims;
    result.tokens.resize(static_cast<size_t>(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t)
        result.tokens[size_t(t)] = fsq_token(result.projection.data() + t * kFsqDims);
    return result;
}

} // namespace chatterbox::s3tokenizer
