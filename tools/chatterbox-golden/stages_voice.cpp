// Golden stages of the voice front end: the reference audio at both rates (two resamplers) and the
// four feature front ends, computed from the case's reference file alone.

#include "stages.h"

#include "audio/audio_file.h"
#include "audio/features.h"
#include "audio/resample.h"

#include <algorithm>

namespace chatterbox::golden {

namespace {

constexpr int kS3GenRate = 24000;
constexpr int kS3Rate = 16000;
constexpr size_t kDecoderCondSamples = 10 * kS3GenRate; // DEC_COND_LEN: S3Gen reference, 10 s
constexpr size_t kEncoderCondSamples = 6 * kS3Rate;     // ENC_COND_LEN: T3 speech prompt, 6 s

std::vector<float> head(const std::vector<float> &x, size_t n) {
    return {x.begin(), x.begin() + std::ptrdiff_t(std::min(n, x.size()))};
}

NpyArray matrix_array(const audio::Matrix &m, Shape shape) { return NpyArray::from_f32(std::move(shape), m.values); }

void run_voice_front_end(GoldenRun &run) {
    // librosa.load(path, sr=24000): mono float32, resampled with soxr_hq when the file is not 24 kHz.
    const audio::Audio file = audio::read_audio(run.input_path(run.golden_case().ref_wav));
    const std::vector<float> ref24 = file.sample_rate == kS3GenRate
                                         ? file.samples
                                         : audio::resample_soxr_hq(file.samples, file.sample_rate, kS3GenRate);
    run.write("ref_wav_24k", NpyArray::from_f32({int64_t(ref24.size())}, ref24));

    const std::vector<float> ref16 = audio::resample_soxr_hq(ref24, kS3GenRate, kS3Rate);
    run.write("ref_wav_16k_librosa", NpyArray::from_f32({int64_t(ref16.size())}, ref16));

    // S3Gen.embed_ref works on the first 10 s, resampled again with torchaudio's resampler.
    const std::vector<float> cut24 = head(ref24, kDecoderCondSamples);
    const std::vector<float> ref16_ta = audio::resample_torchaudio(cut24, kS3GenRate, kS3Rate);
    run.write("ref_wav_16k_torchaudio", NpyArray::from_f32({int64_t(ref16_ta.size())}, ref16_ta));

    const audio::Matrix mel24 = audio::s3gen_mel(cut24);
    run.write("s3gen_ref_mel_24k", matrix_array(mel24, {1, mel24.rows, mel24.cols}));

    const audio::Matrix logmel_gen = audio::s3tokenizer_log_mel(ref16_ta);
    run.write("s3tok_logmel_s3genprompt", matrix_array(logmel_gen, {logmel_gen.rows, logmel_gen.cols}));
    const audio::Matrix logmel_t3 = audio::s3tokenizer_log_mel(head(ref16, kEncoderCondSamples));
    run.write("s3tok_logmel_t3prompt", matrix_array(logmel_t3, {logmel_t3.rows, logmel_t3.cols}));

    const std::vector<float> trimmed = audio::trim_silence(ref16);
    run.write("ve_trimmed_wav16k", NpyArray::from_f32({int64_t(trimmed.size())}, trimmed));
    const audio::Matrix ve_mel = audio::voice_encoder_mel(ref16);
    run.write("ve_mel", matrix_array(ve_mel, {ve_mel.rows, ve_mel.cols}));

    const audio::Matrix fbank = audio::campplus_fbank(ref16_ta);
    run.write("campplus_fbank", matrix_array(fbank, {fbank.rows, fbank.cols}));
}

} // namespace

void add_voice_stages(std::vector<Stage> &stages) {
    stages.push_back({"voice_front_end",
                      {"ref_wav_24k", "ref_wav_16k_librosa", "ref_wav_16k_torchaudio", "s3gen_ref_mel_24k",
                       "s3tok_logmel_s3genprompt", "s3tok_logmel_t3prompt", "ve_trimmed_wav16k", "ve_mel",
                       "campplus_fbank"},
                      run_voice_front_end});
}

} // namespace chatterbox::golden
