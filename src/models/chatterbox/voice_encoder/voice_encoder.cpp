#include "models/chatterbox/voice_encoder/voice_encoder.h"

#include "core/error.h"
#include "modules/module_weights.h"

#include <algorithm>
#include <cmath>

namespace chatterbox::voice_encoder {

namespace {

// Divides v (n) by its L2 norm; `what` names it in the error for a zero vector.
void l2_normalise(float *v, int64_t n, const std::string &what) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += double(v[i]) * v[i];
    if (!(sum > 0)) fail("VoiceEncoder: ", what, " is all zero and cannot be L2-normalised");
    const float norm = float(std::sqrt(sum));
    for (int64_t i = 0; i < n; ++i) v[i] /= norm;
}

} // namespace

PartialLayout partial_layout(int64_t frames, const PartialOptions &options) {
    if (frames < 1) fail("VoiceEncoder: the mel has ", frames, " frames, expected at least 1");
    if (!(options.overlap >= 0.0 && options.overlap < 1.0))
        fail("VoiceEncoder: overlap ", options.overlap, " is outside [0, 1)");
    if (!(options.rate >= 0.0) || !std::isfinite(options.rate))
        fail("VoiceEncoder: rate ", options.rate, " must be a finite number >= 0 (0: use the overlap)");
    if (!(options.min_coverage > 0.0 && options.min_coverage <= 1.0))
        fail("VoiceEncoder: min_coverage ", options.min_coverage, " is outside (0, 1]");
    // np.round: half to even, as std::nearbyint in the default rounding mode.
    const double step = options.rate > 0 ? std::nearbyint((double(kSampleRate) / options.rate) / kPartialFrames)
                                         : std::nearbyint(kPartialFrames * (1.0 - options.overlap));
    if (!(step > 0 && step <= kPartialFrames))
        fail("VoiceEncoder: rate ", options.rate, " / overlap ", options.overlap, " give a frame step of ", step,
             ", expected 1..", kPartialFrames);
    PartialLayout layout;
    layout.step = int64_t(step);
    const int64_t span = std::max<int64_t>(frames - kPartialFrames + layout.step, 0);
    layout.count = span / layout.step;
    const int64_t remainder = span % layout.step;
    const double coverage = double(remainder + (kPartialFrames - layout.step)) / kPartialFrames;
    if (layout.count == 0 || coverage >= options.min_coverage) ++layout.count;
    layout.target_frames = kPartialFrames + layout.step * (layout.count - 1);
    return layout;
}

VoiceEncoder::VoiceEncoder(const WeightStore &store, Backend &backend, const VoiceEncoderHParams &hp,
                           const std::string &prefix)
    : hp_(hp) {
    hp_.validate(); // the code below is written for the fixed sizes
    ModuleWeights w(store, prefix, backend);
    lstm_ = nn::Lstm(w, "lstm", hp_.mel_bins, hp_.embedding, int(hp_.lstm_layers));
    const std::vector<float> proj = w.host_f32("proj.weight", {kEmbeddingSize, kEmbeddingSize});
    proj_bias_ = w.host_f32("proj.bias", {kEmbeddingSize});
    w.ignore("similarity_");
    w.load(); // reports every missing / mis-shaped / unexpected tensor; nothing is uploaded
    proj_weight_t_.resize(proj.size());
    for (int64_t o = 0; o < kEmbeddingSize; ++o)
        for (int64_t i = 0; i < kEmbeddingSize; ++i)
            proj_weight_t_[size_t(i * kEmbeddingSize + o)] = proj[size_t(o * kEmbeddingSize + i)];
}

Embedding VoiceEncoder::embed(const std::vector<float> &mel, int64_t frames, const PartialOptions &options,
                              int threads) const {
    if (frames < 1) fail("VoiceEncoder: the mel has ", frames, " frames, expected at least 1");
    if (int64_t(mel.size()) != frames * kMelBins)
        fail("VoiceEncoder: the mel has ", mel.size(), " values, expected frames ", frames, " x ", kMelBins, " = ",
             frames * kMelBins);
    for (size_t i = 0; i < mel.size(); ++i)
        if (!std::isfinite(mel[i]))
            fail("VoiceEncoder: mel value ", mel[i], " at frame ", i / kMelBins, ", bin ", i % kMelBins,
                 " is not finite");
    const PartialLayout layout = partial_layout(frames, options);

    // (partials, 160, 40): partial p = frames [p step, p step + 160) of the mel zero-padded/truncated to target.
    std::vector<float> windows(size_t(layout.count * kPartialFrames * kMelBins), 0.0f);
    for (int64_t p = 0; p < layout.count; ++p)
        for (int64_t t = 0; t < kPartialFrames; ++t) {
            const int64_t source = p * layout.step + t;
            if (source >= frames) break;
            std::copy_n(mel.begin() + source * kMelBins, kMelBins,
                        windows.begin() + (p * kPartialFrames + t) * kMelBins);
        }
    const std::vector<float> hidden = lstm_.final_hidden(windows, layout.count, kPartialFrames, threads);

    Embedding result;
    result.partials = layout.count;
    result.partial_embeds.resize(size_t(layout.count * kEmbeddingSize));
    result.speaker_emb.assign(size_t(kEmbeddingSize), 0.0f);
    for (int64_t p = 0; p < layout.count; ++p) {
        float *e = result.partial_embeds.data() + p * kEmbeddingSize;
        std::copy(proj_bias_.begin(), proj_bias_.end(), e);
        for (int64_t i = 0; i < kEmbeddingSize; ++i) {
            const float h = hidden[size_t(p * kEmbeddingSize + i)];
            const float *row = proj_weight_t_.data() + i * kEmbeddingSize;
            for (int64_t o = 0; o < kEmbeddingSize; ++o) e[o] += h * row[o];
        }
        for (int64_t o = 0; o < kEmbeddingSize; ++o) e[o] = std::max(e[o], 0.0f); // ve_final_relu
        l2_normalise(e, kEmbeddingSize, concat("the embedding of partial ", p));
        for (int64_t o = 0; o < kEmbeddingSize; ++o) result.speaker_emb[size_t(o)] += e[o];
    }
    for (float &v : result.speaker_emb) v /= float(layout.count);
    l2_normalise(result.speaker_emb.data(), kEmbeddingSize, "the mean of the partial embeddings");
    return result;
}

} // namespace chatterbox::voice_encoder
