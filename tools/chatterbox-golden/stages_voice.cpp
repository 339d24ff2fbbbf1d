// Golden stage of the voice conditionals: VoiceBuilder::from_file on the case's reference, with every
// intermediate result of the front end and the three voice models, computed from the recording alone.

#include "stages.h"

#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/s3tokenizer/s3tokenizer.h"
#include "models/chatterbox/variant_spec.h"
#include "models/chatterbox/voice.h"

#include <utility>

namespace chatterbox::golden {

namespace {

NpyArray vector_array(const std::vector<float> &v) { return NpyArray::from_f32({int64_t(v.size())}, v); }
NpyArray matrix_array(const audio::Matrix &m) { return NpyArray::from_f32({m.rows, m.cols}, m.values); }
NpyArray token_array(Shape shape, const std::vector<int32_t> &tokens) {
    return NpyArray::from_i64(std::move(shape), {tokens.begin(), tokens.end()});
}
NpyArray projection_array(const std::vector<float> &projection) {
    using s3tokenizer::kFsqDims;
    return NpyArray::from_f32({int64_t(projection.size()) / kFsqDims, kFsqDims}, projection);
}

void run_voice(GoldenRun &run) {
    const std::unique_ptr<PipelineModel> engine = load_engine(run, components(Component::voice));
    PipelineSession session(*engine);
    VoiceTaps taps;
    const VoiceConditionals voice = session.voice_from_file(run.input_path(run.golden_case().ref_wav),
                                                            run.golden_case().params.exaggeration, &taps);

    // Front end. A variant that normalises the reference's loudness records the normalised wave.
    const bool loudness_normalised = variant_spec(run.golden_case().variant).reference.loudness_lufs.has_value();
    run.write(loudness_normalised ? "ref_wav_24k_loudnorm" : "ref_wav_24k", vector_array(taps.ref_wav_24k));
    run.write("ref_wav_16k_librosa", vector_array(taps.ref_wav_16k_librosa));
    run.write("ref_wav_16k_torchaudio", vector_array(taps.ref_wav_16k_torchaudio));
    const audio::Matrix &mel24 = taps.s3gen_ref_mel_24k;
    run.write("s3gen_ref_mel_24k", NpyArray::from_f32({1, mel24.rows, mel24.cols}, mel24.values));
    run.write("s3tok_logmel_s3genprompt", matrix_array(taps.s3tok_logmel_s3genprompt));
    run.write("s3tok_logmel_t3prompt", matrix_array(taps.s3tok_logmel_t3prompt));
    run.write("ve_trimmed_wav16k", vector_array(taps.ve_trimmed_wav16k));
    run.write("ve_trim_interval", NpyArray::from_i64({2}, {taps.ve_trim_interval.begin, taps.ve_trim_interval.end}));
    run.write("ve_mel", matrix_array(taps.ve_mel));
    run.write("campplus_fbank", matrix_array(taps.campplus_fbank));

    // Models.
    const int64_t embedding = int64_t(voice.t3.speaker_emb.size());
    run.write("ve_partial_embeds", NpyArray::from_f32({taps.ve_partials, embedding}, taps.ve_partial_embeds));
    run.write("ve_speaker_emb", NpyArray::from_f32({1, embedding}, voice.t3.speaker_emb));
    run.write("campplus_xvector", NpyArray::from_f32({1, int64_t(voice.s3gen.xvector.size())}, voice.s3gen.xvector));
    run.write("s3tok_fsq_projection_t3prompt", projection_array(taps.s3tok_projection_t3prompt));
    run.write("s3tok_tokens_t3prompt",
              token_array({int64_t(taps.s3tok_tokens_t3prompt.size())}, taps.s3tok_tokens_t3prompt));
    run.write("s3tok_fsq_projection_s3genprompt", projection_array(taps.s3tok_projection_s3genprompt));
    run.write("s3tok_tokens_s3genprompt",
              token_array({int64_t(taps.s3tok_tokens_s3genprompt.size())}, taps.s3tok_tokens_s3genprompt));

    // The conditionals.
    run.write("t3_cond_prompt_tokens",
              token_array({1, int64_t(voice.t3.prompt_tokens.size())}, voice.t3.prompt_tokens));
    run.write("s3gen_prompt_tokens",
              token_array({1, int64_t(voice.s3gen.prompt_tokens.size())}, voice.s3gen.prompt_tokens));
    const int64_t mel_bins = mel24.rows;
    run.write("s3gen_prompt_feat", NpyArray::from_f32({1, int64_t(voice.s3gen.prompt_mel.size()) / mel_bins, mel_bins},
                                                      voice.s3gen.prompt_mel));
}

} // namespace

void add_voice_stages(std::vector<Stage> &stages) {
    stages.push_back({"voice",
                      {"ref_wav_24k",
                       "ref_wav_24k_loudnorm",
                       "ref_wav_16k_librosa",
                       "ref_wav_16k_torchaudio",
                       "s3gen_ref_mel_24k",
                       "s3tok_logmel_s3genprompt",
                       "s3tok_logmel_t3prompt",
                       "ve_trimmed_wav16k",
                       "ve_trim_interval",
                       "ve_mel",
                       "campplus_fbank",
                       "ve_partial_embeds",
                       "ve_speaker_emb",
                       "campplus_xvector",
                       "s3tok_fsq_projection_t3prompt",
                       "s3tok_tokens_t3prompt",
                       "s3tok_fsq_projection_s3genprompt",
                       "s3tok_tokens_s3genprompt",
                       "t3_cond_prompt_tokens",
                       "s3gen_prompt_tokens",
                       "s3gen_prompt_feat"},
                      run_voice});
}

} // namespace chatterbox::golden
