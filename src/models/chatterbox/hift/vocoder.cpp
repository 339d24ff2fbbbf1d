#include "models/chatterbox/hift/vocoder.h"

#include "core/error.h"
#include "models/chatterbox/hift/vocoder_batch.h"

#include <cmath>

namespace chatterbox::hift {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

void apply_trim_fade(std::vector<float> &wave, int64_t fade_samples) {
    const int64_t n = fade_samples;
    // torch.linspace(pi, 0, n) in float32: start + i step for the first half, end - (n-1-i) step after.
    const float start = float(kPi), end = 0.0f;
    const float step = n > 1 ? (end - start) / float(n - 1) : 0.0f;
    for (int64_t i = 0; i < 2 * n && i < int64_t(wave.size()); ++i) {
        float gain = 0.0f;
        if (i >= n) {
            const int64_t k = i - n;
            const float x = k < n / 2 ? start + step * float(k) : end - step * float(n - 1 - k);
            gain = (std::cos(x) + 1.0f) / 2.0f;
        }
        wave[size_t(i)] *= gain;
    }
}

VocoderModel::VocoderModel(const WeightStore &store, Backend &backend, const HiftHParams &hp, const std::string &prefix)
    : hp_(hp), weights_(store, prefix, backend), f0_predictor_(weights_, "f0_predictor", hp),
      source_merge_(weights_, "m_source.l_linear", hp), generator_(weights_, hp) {
    weights_.load();
}

int64_t VocoderModel::validate(const std::vector<float> &mel) const {
    if (mel.empty()) fail("HiFT: the mel spectrogram is empty");
    if (mel.size() % size_t(hp_.mel_bins) != 0)
        fail("HiFT: the mel holds ", mel.size(), " values, not a whole number of ", hp_.mel_bins, "-bin frames");
    const int64_t frames = int64_t(mel.size()) / hp_.mel_bins;
    if (frames > hp_.max_frames)
        fail("HiFT: ", frames, " mel frames exceed the limit of ", hp_.max_frames, " (",
             hp_.max_frames * hp_.samples_per_frame() / hp_.sample_rate, " s of audio)");
    for (size_t i = 0; i < mel.size(); ++i)
        if (!std::isfinite(mel[i]))
            fail("HiFT: mel value ", mel[i], " at bin ", int64_t(i) / frames, ", frame ", int64_t(i) % frames,
                 " is not finite");
    return frames;
}

VocoderSession::VocoderSession(const VocoderModel &model, Backend &backend, VocoderBatch *batch,
                               const CancelFlag *cancel)
    : model_(model), backend_(backend), batch_(batch), batch_cancel_(cancel) {}

VocoderSession::~VocoderSession() = default;

VocoderGraphs &VocoderSession::graphs(int64_t frames) {
    if (!graphs_ || graphs_->frames().front() != frames) {
        graphs_.reset(); // the old length's buffers go before the new ones are allocated
        graphs_ = std::make_unique<VocoderGraphs>(model_, backend_, std::vector<int64_t>{frames});
    }
    return *graphs_;
}

std::vector<float> VocoderSession::predict_f0(const std::vector<float> &mel) {
    return std::move(graphs(validate(mel)).predict_f0({&mel}).front());
}

std::vector<float> VocoderSession::source(const std::vector<float> &f0, const SourceNoise &noise) const {
    return sine_source(f0, noise, model_.source_merge(), hparams());
}

std::vector<float> VocoderSession::decode(const std::vector<float> &mel, const std::vector<float> &source) {
    return std::move(graphs(validate(mel)).decode({&mel}, {&source}).front());
}

std::vector<float> VocoderSession::synthesize(const std::vector<float> &mel, const SourceNoise *injected, uint64_t seed,
                                              VocoderTaps *taps) {
    const HiftHParams &hp = hparams();
    const int64_t frames = validate(mel);
    const int64_t samples = frames * hp.samples_per_frame();
    SourceNoise drawn;
    if (!injected) {
        TorchGenerator rng(seed);
        drawn = draw_source_noise(rng, hp.harmonics, samples);
    }
    const SourceNoise &noise = injected ? *injected : drawn;
    VocoderTaps record;
    if (batch_) {
        record = batch_->vocode(mel, noise, batch_cancel_);
    } else {
        record.f0 = predict_f0(mel);
        record.source = source(record.f0, noise);
        record.raw = decode(mel, record.source);
    }
    std::vector<float> wave;
    if (taps) {
        wave = record.raw;
        *taps = std::move(record);
    } else {
        wave = std::move(record.raw);
    }
    apply_trim_fade(wave, hp.fade_samples);
    return wave;
}

} // namespace chatterbox::hift
