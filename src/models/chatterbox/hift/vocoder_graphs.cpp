#include "models/chatterbox/hift/vocoder_graphs.h"

#include "core/error.h"
#include "core/graph.h"
#include "models/chatterbox/hift/spectral.h"
#include "models/chatterbox/hift/vocoder.h"

#include <algorithm>

namespace chatterbox::hift {

namespace {

// Requests' (channels, lengths[r]) arrays -> one (B, channels, longest) array, zeros after each.
std::vector<float> pad_batch(const std::vector<const std::vector<float> *> &values, int64_t channels,
                             const std::vector<int64_t> &lengths, int64_t longest) {
    std::vector<float> out(values.size() * size_t(channels * longest), 0.0f);
    for (size_t r = 0; r < values.size(); ++r)
        for (int64_t c = 0; c < channels; ++c)
            std::copy_n(values[r]->data() + c * lengths[r], lengths[r],
                        out.data() + (int64_t(r) * channels + c) * longest);
    return out;
}

// The inverse: request r's (channels, lengths[r]) from the (B, channels, longest) array.
std::vector<float> unpad_request(const std::vector<float> &batch, size_t r, int64_t channels, int64_t length,
                                 int64_t longest) {
    std::vector<float> out(size_t(channels * length));
    for (int64_t c = 0; c < channels; ++c)
        std::copy_n(batch.data() + (int64_t(r) * channels + c) * longest, length, out.data() + c * length);
    return out;
}

} // namespace

// Where the requests' lengths differ, the masks of the four points of the generator (stage
// lengths, generator.h); F0Graph uses the first.
struct PaddingMasks {
    StageMasks tensors{};
    std::vector<std::vector<float>> values;

    PaddingMasks(GraphRunner &runner, const Generator &generator, const std::vector<int64_t> &frames, size_t points) {
        const int64_t longest = *std::max_element(frames.begin(), frames.end());
        if (std::all_of(frames.begin(), frames.end(), [&](int64_t t) { return t == longest; })) return;
        const StageLengths full = generator.stage_lengths(longest);
        const int64_t batch = int64_t(frames.size());
        for (size_t s = 0; s < points; ++s) {
            tensors[s] = runner.input("padding_mask_" + std::to_string(s), GGML_TYPE_F32, {batch, 1, full[s]});
            std::vector<float> ones(size_t(batch * full[s]), 0.0f);
            for (size_t r = 0; r < frames.size(); ++r)
                std::fill_n(ones.begin() + int64_t(r) * full[s], generator.stage_lengths(frames[r])[s], 1.0f);
            values.push_back(std::move(ones));
        }
    }
    void set(GraphRunner &runner) const {
        for (size_t s = 0; s < values.size(); ++s) runner.set_input(tensors[s], values[s]);
    }
};

struct VocoderGraphs::F0Graph {
    GraphRunner runner;
    PaddingMasks masks;
    ggml_tensor *mel = nullptr;
    ggml_tensor *f0 = nullptr;

    F0Graph(Backend &backend, const VocoderModel &model, const std::vector<int64_t> &frames, int64_t longest)
        : runner(backend), masks(runner, model.generator(), frames, 1) {
        mel = runner.input("mel", GGML_TYPE_F32, {int64_t(frames.size()), model.hparams().mel_bins, longest});
        f0 = model.f0_predictor()(runner.ctx(), mel, masks.tensors[0]);
        runner.build({f0});
        masks.set(runner);
    }
};

struct VocoderGraphs::DecoderGraph {
    int64_t stft_frames;
    GraphRunner runner;
    PaddingMasks masks;
    ggml_tensor *mel = nullptr;
    ggml_tensor *source_stft = nullptr;
    ggml_tensor *heads = nullptr;

    DecoderGraph(Backend &backend, const VocoderModel &model, const std::vector<int64_t> &frames, int64_t longest)
        : stft_frames(model.generator().stage_lengths(longest)[3]), runner(backend),
          masks(runner, model.generator(), frames, 4) {
        const HiftHParams &hp = model.hparams();
        const int64_t batch = int64_t(frames.size());
        mel = runner.input("mel", GGML_TYPE_F32, {batch, hp.mel_bins, longest});
        source_stft = runner.input("source_stft", GGML_TYPE_F32, {batch, 2 * hp.spectrum_bins(), stft_frames});
        heads = model.generator()(runner.ctx(), mel, source_stft, masks.tensors);
        runner.build({heads});
        masks.set(runner);
    }
};

VocoderGraphs::VocoderGraphs(const VocoderModel &model, Backend &backend, std::vector<int64_t> frames)
    : model_(model), backend_(backend), frames_(std::move(frames)) {
    if (frames_.empty()) fail("HiFT: a batch of no mels");
    for (int64_t t : frames_)
        if (t < 1 || t > model.hparams().max_frames)
            fail("HiFT: a mel of ", t, " frames, expected 1 .. ", model.hparams().max_frames);
    longest_ = *std::max_element(frames_.begin(), frames_.end());
}

VocoderGraphs::~VocoderGraphs() = default;

std::vector<std::vector<float>> VocoderGraphs::predict_f0(const std::vector<const std::vector<float> *> &mels) {
    const HiftHParams &hp = model_.hparams();
    if (mels.size() != frames_.size()) fail("HiFT: ", mels.size(), " mels for a batch of ", frames_.size());
    for (size_t r = 0; r < mels.size(); ++r)
        if (mels[r]->size() != size_t(hp.mel_bins * frames_[r]))
            fail("HiFT: mel ", r, " holds ", mels[r]->size(), " values, expected ", hp.mel_bins, " x ", frames_[r]);
    if (!f0_graph_) f0_graph_ = std::make_unique<F0Graph>(backend_, model_, frames_, longest_);
    GraphRunner &runner = f0_graph_->runner;
    runner.set_input(f0_graph_->mel, pad_batch(mels, hp.mel_bins, frames_, longest_));
    runner.compute();
    const std::vector<float> f0 = runner.read_f32(f0_graph_->f0);
    std::vector<std::vector<float>> out;
    for (size_t r = 0; r < frames_.size(); ++r) out.push_back(unpad_request(f0, r, 1, frames_[r], longest_));
    return out;
}

std::vector<std::vector<float>> VocoderGraphs::decode(const std::vector<const std::vector<float> *> &mels,
                                                      const std::vector<const std::vector<float> *> &sources) {
    const HiftHParams &hp = model_.hparams();
    if (mels.size() != frames_.size() || sources.size() != frames_.size())
        fail("HiFT decode: ", mels.size(), " mels and ", sources.size(), " sources for a batch of ", frames_.size());
    for (size_t r = 0; r < frames_.size(); ++r) {
        if (mels[r]->size() != size_t(hp.mel_bins * frames_[r]))
            fail("HiFT decode: mel ", r, " holds ", mels[r]->size(), " values, expected ", hp.mel_bins, " x ",
                 frames_[r]);
        if (sources[r]->size() != size_t(frames_[r] * hp.samples_per_frame()))
            fail("HiFT decode: the source has ", sources[r]->size(), " samples, expected ",
                 frames_[r] * hp.samples_per_frame(), " for ", frames_[r], " mel frames");
    }
    const Generator &generator = model_.generator();
    std::vector<int64_t> stft_lengths;
    std::vector<std::vector<float>> stfts;
    for (size_t r = 0; r < frames_.size(); ++r) {
        stft_lengths.push_back(generator.stage_lengths(frames_[r])[3]);
        stfts.push_back(source_stft(*sources[r], hp));
    }
    if (!decoder_graph_) decoder_graph_ = std::make_unique<DecoderGraph>(backend_, model_, frames_, longest_);
    DecoderGraph &g = *decoder_graph_;
    const int64_t channels = 2 * hp.spectrum_bins();
    std::vector<const std::vector<float> *> stft_views;
    for (const std::vector<float> &s : stfts) stft_views.push_back(&s);
    g.runner.set_input(g.mel, pad_batch(mels, hp.mel_bins, frames_, longest_));
    g.runner.set_input(g.source_stft, pad_batch(stft_views, channels, stft_lengths, g.stft_frames));
    g.runner.compute();
    const std::vector<float> heads = g.runner.read_f32(g.heads);
    std::vector<std::vector<float>> waves;
    for (size_t r = 0; r < frames_.size(); ++r)
        waves.push_back(
            heads_to_wave(unpad_request(heads, r, channels, stft_lengths[r], g.stft_frames), stft_lengths[r], hp));
    return waves;
}

} // namespace chatterbox::hift
