#include "models/chatterbox/hift/vocoder.h"

#include "core/error.h"
#include "models/chatterbox/hift/spectral.h"

#include <cmath>
#include <random>

namespace chatterbox::hift {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

struct Vocoder::F0Graph {
    int64_t frames;
    GraphRunner runner;
    ggml_tensor *mel = nullptr;
    ggml_tensor *f0 = nullptr;

    F0Graph(Backend &backend, const HiftHParams &hp, const F0Predictor &predictor, int64_t t)
        : frames(t), runner(backend) {
        mel = runner.input("mel", GGML_TYPE_F32, {1, hp.mel_bins, t});
        f0 = predictor(runner.ctx(), mel);
        runner.build({f0});
    }
};

struct Vocoder::DecoderGraph {
    int64_t frames;
    int64_t stft_frames;
    GraphRunner runner;
    ggml_tensor *mel = nullptr;
    ggml_tensor *source_stft = nullptr;
    ggml_tensor *heads = nullptr;

    DecoderGraph(Backend &backend, const HiftHParams &hp, const Generator &generator, int64_t t)
        : frames(t), stft_frames(hp.upsample_factor() * t + 1), runner(backend) {
        mel = runner.input("mel", GGML_TYPE_F32, {1, hp.mel_bins, t});
        source_stft = runner.input("source_stft", GGML_TYPE_F32, {1, 2 * hp.spectrum_bins(), stft_frames});
        heads = generator(runner.ctx(), mel, source_stft);
        runner.build({heads});
    }
};

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

VocoderModel::VocoderModel(const WeightStore &store, Backend &backend, const HiftHParams &hp,
                           const std::string &prefix)
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

Vocoder::Vocoder(const VocoderModel &model, Backend &backend) : model_(model), backend_(backend) {}

Vocoder::~Vocoder() = default;

std::vector<float> Vocoder::predict_f0(const std::vector<float> &mel) {
    const HiftHParams &hp = hparams();
    const int64_t frames = validate(mel);
    if (!f0_graph_ || f0_graph_->frames != frames)
        f0_graph_ = std::make_unique<F0Graph>(backend_, hp, model_.f0_predictor(), frames);
    f0_graph_->runner.set_input(f0_graph_->mel, mel);
    f0_graph_->runner.compute();
    return f0_graph_->runner.read_f32(f0_graph_->f0);
}

std::vector<float> Vocoder::source(const std::vector<float> &f0, const SourceNoise &noise) const {
    return sine_source(f0, noise, model_.source_merge(), hparams());
}

std::vector<float> Vocoder::decode(const std::vector<float> &mel, const std::vector<float> &source) {
    const HiftHParams &hp = hparams();
    const int64_t frames = validate(mel);
    if (source.size() != size_t(frames * hp.samples_per_frame()))
        fail("HiFT decode: the source has ", source.size(), " samples, expected ", frames * hp.samples_per_frame(),
             " for ", frames, " mel frames");
    if (!decoder_graph_ || decoder_graph_->frames != frames)
        decoder_graph_ = std::make_unique<DecoderGraph>(backend_, hp, model_.generator(), frames);
    DecoderGraph &g = *decoder_graph_;
    g.runner.set_input(g.mel, mel);
    g.runner.set_input(g.source_stft, source_stft(source, hp));
    g.runner.compute();
    return heads_to_wave(g.runner.read_f32(g.heads), g.stft_frames, hp);
}

std::vector<float> Vocoder::synthesize(const std::vector<float> &mel, const SourceNoise *injected, uint64_t seed,
                                       VocoderTaps *taps) {
    const HiftHParams &hp = hparams();
    const int64_t frames = validate(mel);
    const int64_t samples = frames * hp.samples_per_frame();
    SourceNoise drawn;
    if (!injected) {
        std::mt19937_64 rng(seed);
        drawn = draw_source_noise(rng, hp.harmonics, samples);
    }
    std::vector<float> f0 = predict_f0(mel);
    std::vector<float> s = source(f0, injected ? *injected : drawn);
    std::vector<float> wave = decode(mel, s);
    if (taps) {
        taps->f0 = std::move(f0);
        taps->source = std::move(s);
        taps->raw = wave;
    }
    apply_trim_fade(wave, hp.fade_samples);
    return wave;
}

} // namespace chatterbox::hift
