#include "models/chatterbox/s3gen/flow.h"

#include "core/error.h"
#include "core/graph.h"
#include "models/chatterbox/s3gen/flow_batch.h"
#include "modules/rel_pos_attention.h"

#include <algorithm>
#include <cmath>

namespace chatterbox::s3gen {

namespace {

void check_finite(const std::vector<float> &values, const char *what) {
    for (size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i])) fail("S3Gen flow: ", what, " has a non-finite value at index ", i);
}

void check_ids(const std::vector<int32_t> &ids, int64_t vocab, const char *what) {
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= vocab)
            fail("S3Gen flow: ", what, " id ", ids[i], " at position ", i, " is outside the speech vocabulary [0, ",
                 vocab, ")");
}

// F.normalize(x, dim=1): x / max(||x||, 1e-12), the division in f32.
std::vector<float> l2_normalized(const std::vector<float> &x) {
    double squares = 0;
    for (float v : x) squares += double(v) * double(v);
    const float norm = float(std::max(std::sqrt(squares), 1e-12));
    std::vector<float> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] / norm;
    return out;
}

} // namespace

Mel generated_part(const std::vector<float> &full, int64_t mel_bins, int64_t frames, int64_t prompt_frames) {
    if (mel_bins <= 0 || frames <= 0 || prompt_frames < 0 || prompt_frames > frames ||
        full.size() != size_t(mel_bins * frames))
        fail("generated_part: ", full.size(), " values do not form ", mel_bins, " x ", frames,
             " frames with a prompt of ", prompt_frames);
    Mel out;
    out.frames = frames - prompt_frames;
    out.values.resize(size_t(mel_bins * out.frames));
    for (int64_t c = 0; c < mel_bins; ++c)
        std::copy_n(full.begin() + c * frames + prompt_frames, out.frames, out.values.begin() + c * out.frames);
    return out;
}

std::vector<int32_t> flow_input_tokens(std::vector<int32_t> speech_tokens, const FlowHParams &hp) {
    speech_tokens.insert(speech_tokens.end(), size_t(hp.trailing_silence_tokens), int32_t(hp.silence_token));
    return speech_tokens;
}

FlowModel::FlowModel(const WeightStore &store, Backend &backend, const FlowHParams &hp, const std::string &prefix)
    // The flow's products may round to bf16: flow_mel stays within 2.5e-2 of f32 that way
    // (tests/golden/test_s3gen_flow_golden.cpp measures it); the f32 path stays selectable.
    : hp_(hp), weights_(store, prefix, backend, kernels::ProductPrecision::bf16),
      token_embedding_(weights_, "input_embedding", hp.vocab, hp.encoder_dim),
      speaker_projection_(weights_, "spk_embed_affine_layer", hp.speaker_dim, hp.mel_bins),
      encoder_(weights_, "encoder", hp), encoder_projection_(weights_, "encoder_proj", hp.encoder_dim, hp.mel_bins),
      estimator_(weights_, "decoder.estimator", hp) {
    weights_.load();
}

FlowSession::FlowSession(const FlowModel &model, Backend &backend, nn::AttentionPath attention, FlowBatch *batch,
                         const CancelFlag *cancel)
    : model_(model), backend_(backend), attention_(attention), batch_(batch), batch_cancel_(cancel) {}

void FlowSession::validate(const std::vector<int32_t> &tokens, const FlowReference &reference) const {
    const FlowHParams &hp = model_.hparams();
    if (tokens.empty()) fail("S3Gen flow: the speech token list is empty");
    check_ids(tokens, hp.vocab, "speech token");
    check_ids(reference.prompt_tokens, hp.vocab, "prompt token");
    const int64_t total = int64_t(tokens.size() + reference.prompt_tokens.size());
    if (total > hp.max_total_tokens)
        fail("S3Gen flow: ", reference.prompt_tokens.size(), " prompt + ", tokens.size(), " speech tokens = ", total,
             " exceed the limit of ", hp.max_total_tokens, " (split the text into shorter parts)");
    if (reference.xvector.size() != size_t(hp.speaker_dim))
        fail("S3Gen flow: the speaker x-vector has ", reference.xvector.size(), " values, expected ", hp.speaker_dim);
    check_finite(reference.xvector, "the speaker x-vector");
    if (reference.prompt_mel.size() % size_t(hp.mel_bins) != 0)
        fail("S3Gen flow: the prompt mel has ", reference.prompt_mel.size(), " values, not a whole number of ",
             hp.mel_bins, "-bin frames");
    check_finite(reference.prompt_mel, "the prompt mel");
    const int64_t prompt_frames = int64_t(reference.prompt_mel.size()) / hp.mel_bins;
    const int64_t frames = total * hp.token_mel_ratio;
    if (prompt_frames >= frames)
        fail("S3Gen flow: the prompt mel has ", prompt_frames, " frames but the ", total, " tokens give only ", frames,
             " (nothing would be generated)");
}

FlowEncoding FlowSession::encode(const std::vector<int32_t> &tokens, const FlowReference &reference) {
    validate(tokens, reference);
    const FlowHParams &hp = model_.hparams();
    FlowEncoding enc;
    enc.tokens = int64_t(reference.prompt_tokens.size() + tokens.size());
    enc.frames = enc.tokens * hp.token_mel_ratio;
    std::vector<int32_t> all = reference.prompt_tokens;
    all.insert(all.end(), tokens.begin(), tokens.end());

    GraphRunner graph(backend_);
    ggml_context *ctx = graph.ctx();
    const int64_t dim = hp.encoder_dim;
    ggml_tensor *ids = graph.input("flow.tokens", GGML_TYPE_I32, {enc.tokens});
    ggml_tensor *token_positions = graph.input("flow.token_positions", GGML_TYPE_F32, {2 * enc.tokens - 1, dim});
    ggml_tensor *frame_positions = graph.input("flow.frame_positions", GGML_TYPE_F32, {2 * enc.frames - 1, dim});
    ggml_tensor *xvector = graph.input("flow.xvector", GGML_TYPE_F32, {1, hp.speaker_dim});

    ggml_tensor *hidden = // [512, 2Tt]
        model_.encoder()(ctx, model_.token_embedding()(ctx, ids), token_positions, frame_positions, attention_);
    ggml_tensor *mu = ggml_cont(ctx, ggml_transpose(ctx, model_.encoder_projection()(ctx, hidden))); // (80, 2Tt)
    ggml_tensor *speaker = model_.speaker_projection()(ctx, xvector);                                // (80)
    graph.build({hidden, mu, speaker});

    graph.set_input(ids, all);
    graph.set_input(token_positions, nn::espnet_rel_pos_table(enc.tokens, dim));
    graph.set_input(frame_positions, nn::espnet_rel_pos_table(enc.frames, dim));
    graph.set_input(xvector, l2_normalized(reference.xvector));
    graph.compute();
    enc.hidden = graph.read_f32(hidden);
    enc.mu = graph.read_f32(mu);
    enc.speaker = graph.read_f32(speaker);
    return enc;
}

std::vector<float> FlowSession::prompt_condition(const FlowReference &reference, int64_t frames) const {
    const size_t mel = size_t(model_.hparams().mel_bins);
    const size_t prompt_frames = reference.prompt_mel.size() / mel;
    if (prompt_frames > size_t(frames))
        fail("S3Gen flow: prompt mel of ", prompt_frames, " frames is longer than the ", frames, " output frames");
    std::vector<float> cond(mel * size_t(frames), 0.0f);
    for (size_t t = 0; t < prompt_frames; ++t)
        for (size_t c = 0; c < mel; ++c) cond[c * size_t(frames) + t] = reference.prompt_mel[t * mel + c];
    return cond;
}

EstimatorGraph &FlowSession::estimator_graph(int64_t frames) {
    if (!estimator_graph_ || estimator_graph_->frames() != frames) {
        estimator_graph_.reset(); // free the old graph's buffers before allocating the new one
        estimator_graph_ =
            std::make_unique<EstimatorGraph>(model_.estimator(), model_.hparams(), backend_, frames, attention_);
    }
    return *estimator_graph_;
}

void FlowSession::set_cfm_steps(int steps) {
    s3gen::cfm_steps(model_.hparams(), steps); // the range check
    cfm_steps_ = steps;
}

std::vector<float> FlowSession::solve(const FlowEncoding &encoding, const FlowReference &reference,
                                      std::vector<float> noise, const CfmStepObserver &observer) {
    const FlowHParams &hp = model_.hparams();
    if (noise.size() != size_t(hp.mel_bins * encoding.frames))
        fail("S3Gen flow: the initial noise has ", noise.size(), " values, expected ", hp.mel_bins, " x ",
             encoding.frames);
    check_finite(noise, "the initial noise");
    if (batch_)
        return batch_->solve(encoding, prompt_condition(reference, encoding.frames), std::move(noise), batch_cancel_,
                             observer, cfm_steps_);
    EstimatorGraph &graph = estimator_graph(encoding.frames);
    graph.set_conditioning(encoding.mu, encoding.speaker, prompt_condition(reference, encoding.frames));
    return solve_euler(graph, std::move(noise), hp, cfm_time_grid(hp, cfm_steps_), observer);
}

Mel FlowSession::generate(const std::vector<int32_t> &tokens, const FlowReference &reference,
                          std::vector<float> noise) {
    const FlowEncoding encoding = encode(tokens, reference);
    const std::vector<float> full = solve(encoding, reference, std::move(noise));
    const int64_t mel = model_.hparams().mel_bins;
    return generated_part(full, mel, encoding.frames, int64_t(reference.prompt_mel.size()) / mel);
}

Mel FlowSession::generate(const std::vector<int32_t> &tokens, const FlowReference &reference, std::mt19937_64 &rng) {
    validate(tokens, reference);
    const size_t frames = (tokens.size() + reference.prompt_tokens.size()) * size_t(model_.hparams().token_mel_ratio);
    return generate(tokens, reference, standard_normal(size_t(model_.hparams().mel_bins) * frames, rng));
}

} // namespace chatterbox::s3gen
