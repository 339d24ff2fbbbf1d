#pragma once
// S3TokenizerV2 (spec s3tokenizer.md): 128-bin log-mel at 100 frames/s -> 25 Hz speech tokens.
// Two stride-2 convolutions, 6 pre-norm transformer blocks whose attention (RoPE, 20 heads) carries an
// FSMN memory (depthwise conv over the values), then FSQ: 8 tanh-bounded values rounded to 3 levels,
// read as base-3 digits of a token in 0..6560.
//
//   WeightStore store;  store.add_safetensors(dir + "/s3gen.safetensors", "s3gen.");
//   s3tokenizer::S3Tokenizer tokenizer(store, backend);                   // s3gen.tokenizer.*
//   s3tokenizer::Tokens t = tokenizer.tokenize(log_mel, frames, 150);    // log_mel: (128, frames) row-major

#include "core/backend.h"
#include "core/weight_store.h"
#include "models/chatterbox/s3tokenizer/s3tokenizer_hparams.h"
#include "modules/attention.h"
#include "modules/conv1d.h"
#include "modules/feed_forward.h"
#include "modules/linear.h"
#include "modules/module_weights.h"
#include "modules/norm.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace chatterbox::s3tokenizer {

struct Tokens {
    std::vector<float> projection; // (T', 8): project_down output, before tanh
    std::vector<int32_t> tokens;   // (T'), T' = token_count(frames) for one window
};

// Tokens (T') of a window of `frames` mel frames: ceil(ceil(frames / 2) / 2).
int64_t token_count(int64_t frames);

struct Window {
    int64_t start = 0, frames = 0; // mel frames [start, start + frames)
};
// The windows of a long input: starts 0, 2600, ... while < frames, each up to 3000 frames (the last
// ones may be short). A single window for frames <= 3000.
std::vector<Window> sliding_windows(int64_t frames);
// merge_tokenized_segments: rows of window w are kept from kOverlapTokens (w > 0) to
// count - kOverlapTokens (w < last), with Python slice semantics (an empty range when short).
// Returns the kept [begin, end) row range of each window.
std::vector<std::pair<int64_t, int64_t>> merged_ranges(const std::vector<int64_t> &window_tokens);

// FSQ of one frame's 8 projected values: digits round(tanh(h) * 0.999) + 1, token = sum digit_i 3^i.
int32_t fsq_token(const float *projection);

struct AttentionBlock {
    nn::LayerNorm attn_ln, mlp_ln;
    nn::Linear query, key, value, out;
    nn::Conv1d fsmn; // depthwise, kernel 31, padding 15 / 15
    nn::FeedForward mlp;
    int64_t state = 0;
    int heads = 0;
    // The blocked path (f32) where the weights are on a CPU and oneDNN is built in, else plain.
    nn::AttentionPath attention_path = nn::AttentionPath::plain;

    AttentionBlock() = default;
    AttentionBlock(ModuleWeights &w, const std::string &prefix, const S3TokenizerHParams &hp);
    // x: ggml [state, T, 1]; positions: i32 [T] (0..T-1).
    ggml_tensor *operator()(ggml_context *ctx, ggml_tensor *x, ggml_tensor *positions) const;
};

class S3Tokenizer {
  public:
    // Weights under `prefix` ("s3gen.tokenizer." when s3gen.safetensors was added as "s3gen."). The
    // mel filter bank and window buffers Turbo's checkpoint carries (_mel_filters, window) are
    // constants of the front end: checked against the computed ones (an Error naming the tensor
    // when they differ), not used.
    S3Tokenizer(const WeightStore &store, Backend &backend, const S3TokenizerHParams &hp,
                const std::string &prefix = "s3gen.tokenizer.");
    const S3TokenizerHParams &hparams() const { return hp_; }
    ~S3Tokenizer();
    S3Tokenizer(const S3Tokenizer &) = delete;
    S3Tokenizer &operator=(const S3Tokenizer &) = delete;

    // log_mel: (128, frames) row-major (S3Tokenizer.log_mel_spectrogram). max_len > 0 keeps the first
    // 4 * max_len frames (the official forward's max_len); more than kWindowFrames frames are tokenised in
    // sliding windows and merged (projection rows follow the kept tokens). Throws Error for a wrong size,
    // no frames, more than kMaxFrames frames (after truncation), a negative max_len or non-finite values.
    // The graphs run on backend (the caller's session).
    Tokens tokenize(Backend &backend, const std::vector<float> &log_mel, int64_t frames, int64_t max_len = 0) const;

  private:
    S3TokenizerHParams hp_;
    // FSQ projection (T', 8) of one window; mel: (128, total) row-major, window frames [start, start + count).
    std::vector<float> project_window(Backend &backend, const std::vector<float> &mel, int64_t total,
                                      const Window &window) const;

    std::unique_ptr<ModuleWeights> weights_;
    nn::Conv1d conv1_, conv2_;
    std::vector<AttentionBlock> blocks_;
    nn::Linear project_down_;
};

} // namespace chatterbox::s3tokenizer
