// Golden stage of the HiFT vocoder, fed the computed flow mel and the recorded random draws: f0, the
// source excitation, the raw wave and the faded pipeline wave (without the last token's samples
// for a variant that trims it).

#include "stages.h"

#include "models/chatterbox/pipeline_session.h"

#include <algorithm>

namespace chatterbox::golden {

namespace {

void run_hift(GoldenRun &run) {
    const std::unique_ptr<PipelineModel> engine = load_engine(run, components(Component::vocoder));
    PipelineSession session(*engine);
    hift::VocoderSession &vocoder = session.vocoder();

    const NpyArray &mel_array = run.computed("flow_mel"); // (1, 80, T)
    const std::vector<float> mel = mel_array.f32();
    const int64_t frames = mel_array.shape.back();
    const int64_t samples = vocoder.hparams().samples_per_frame() * frames;

    const std::vector<float> f0 = vocoder.predict_f0(mel);
    run.write("hift_f0", NpyArray::from_f32({1, frames}, f0));
    const hift::SourceNoise noise{run.input("hift_phase_vec").f32(), run.input("hift_sine_noise").f32()};
    const std::vector<float> source = vocoder.source(f0, noise);
    run.write("hift_source", NpyArray::from_f32({1, 1, samples}, source));

    std::vector<float> wave = vocoder.decode(mel, source);
    run.write("hift_wav_raw", NpyArray::from_f32({1, samples}, wave));
    hift::apply_trim_fade(wave, vocoder.hparams().fade_samples);
    // mtl_tts.py drops the last speech token's samples (at least one token stays).
    const s3gen::FlowHParams &flow = engine->files().hparams().flow;
    if (flow.trim_last_token) {
        const int64_t tokens = frames / flow.token_mel_ratio;
        const int64_t per_token = flow.token_mel_ratio * vocoder.hparams().samples_per_frame();
        wave.resize(size_t(std::max<int64_t>(1, tokens - 1) * per_token));
    }
    run.write("pipeline_wav", NpyArray::from_f32({1, int64_t(wave.size())}, wave));
}

} // namespace

void add_hift_stages(std::vector<Stage> &stages) {
    stages.push_back({"hift", {"hift_f0", "hift_source", "hift_wav_raw", "pipeline_wav"}, run_hift});
}

} // namespace chatterbox::golden
