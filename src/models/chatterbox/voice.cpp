#include "models/chatterbox/voice.h"

#include "audio/features.h"
#include "audio/loudness.h"
#include "audio/resample.h"
#include "core/error.h"
#include "core/gguf_file.h"
#include "models/chatterbox/campplus/campplus.h"
#include "models/chatterbox/s3tokenizer/s3tokenizer.h"
#include "models/chatterbox/variant_spec.h"
#include "models/chatterbox/voice_encoder/voice_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace chatterbox {

namespace {

constexpr int kS3GenRate = 24000;                       // S3GEN_SR
constexpr int kS3Rate = 16000;                          // S3_SR
constexpr size_t kDecoderCondSamples = 10 * kS3GenRate; // DEC_COND_LEN: the S3Gen reference, 10 s
// ENC_COND_LEN is the T3 prompt length in 16 kHz samples: 150 tokens x 640 samples per token = 6 s.
constexpr size_t kSamplesPerSpeechToken = 640; // S3_TOKEN_HOP
// Rates the resamplers are asked to convert from; outside them a file is more likely broken than speech.
constexpr int kMinSampleRate = 1000;
constexpr int kMaxSampleRate = 384000;

std::vector<float> head(const std::vector<float> &x, size_t n) {
    return {x.begin(), x.begin() + std::ptrdiff_t(std::min(n, x.size()))};
}

// Audio the front end can turn into model inputs: a plausible rate and length, finite samples.
// `what` names it in messages ("reference", "source").
void check_audio(const audio::AudioBuffer &audio, const char *what) {
    if (audio.sample_rate < kMinSampleRate || audio.sample_rate > kMaxSampleRate)
        fail("the ", what, " audio has a sample rate of ", audio.sample_rate, " Hz; expected ", kMinSampleRate, " to ",
             kMaxSampleRate, " Hz");
    if (audio.seconds() < kMinReferenceSeconds)
        fail("the ", what, " audio is ", audio.seconds(), " s long (", audio.samples.size(), " samples); at least ",
             kMinReferenceSeconds, " s are needed");
    if (audio.seconds() > kMaxReferenceSeconds)
        fail("the ", what, " audio is ", audio.seconds(), " s long; the limit is ", kMaxReferenceSeconds, " s");
    for (size_t i = 0; i < audio.samples.size(); ++i)
        if (!std::isfinite(audio.samples[i])) fail("the ", what, " audio has a non-finite sample at ", i);
}

// Silence passes every model but gives a voice of nobody: the official code would build it, we refuse.
void check_not_silent(const audio::AudioBuffer &audio) {
    if (std::all_of(audio.samples.begin(), audio.samples.end(), [](float x) { return x == 0.0f; }))
        fail("the reference audio is silent (every sample is 0); a voice needs speech");
}

std::vector<int32_t> to_i32(const std::vector<int64_t> &values) { return {values.begin(), values.end()}; }

} // namespace

bool voice_fits(Variant voice_variant, Variant model_variant) {
    const ReferencePolicy &a = variant_spec(voice_variant).reference;
    const ReferencePolicy &b = variant_spec(model_variant).reference;
    return a.min_seconds == b.min_seconds && a.min_is_exclusive == b.min_is_exclusive &&
           a.loudness_lufs == b.loudness_lufs &&
           variant_spec(voice_variant).t3.speech_cond_prompt_len ==
               variant_spec(model_variant).t3.speech_cond_prompt_len;
}

void check_voice_fits(const VoiceConditionals &voice, Variant model_variant) {
    if (!voice_fits(voice.variant, model_variant))
        throw InvalidArgument(concat("the voice was built with a ", voice.variant, " model and does not fit this ",
                                     model_variant, " model: build it again from its recording with this model"));
}

std::vector<float> prepare_reference(const audio::AudioBuffer &reference, const ReferencePolicy &policy) {
    check_audio(reference, "reference");
    const double seconds = reference.seconds();
    if (seconds < policy.min_seconds || (policy.min_is_exclusive && seconds <= policy.min_seconds))
        fail("the reference audio is ", seconds, " s long; this model needs ",
             policy.min_is_exclusive ? "more than " : "at least ", policy.min_seconds, " s of speech");
    check_not_silent(reference);
    std::vector<float> ref24 = audio::resample_soxr_hq(reference.samples, reference.sample_rate, kS3GenRate);
    if (policy.loudness_lufs) ref24 = audio::normalize_loudness(ref24, kS3GenRate, *policy.loudness_lufs);
    return ref24;
}

struct VoiceBuilder::Models {
    voice_encoder::VoiceEncoder ve;
    campplus::CampPlus campplus;
    s3tokenizer::S3Tokenizer tokenizer;
    int64_t t3_prompt_tokens; // speech_cond_prompt_len
    ReferencePolicy reference;
    Variant variant;

    Models(const ModelFiles &files, Backend &backend)
        : ve(files.weights(), backend, files.hparams().ve),
          campplus(files.weights(), backend, files.hparams().campplus),
          tokenizer(files.weights(), backend, files.hparams().s3tokenizer),
          t3_prompt_tokens(files.hparams().t3.speech_cond_prompt_len),
          reference(variant_spec(files.hparams().variant).reference), variant(files.hparams().variant) {}
};

VoiceBuilder::VoiceBuilder(const ModelFiles &files, Backend &backend) {
    for (const char *component : {"ve", "s3gen"})
        if (!files.has_component(component))
            fail(files.path(), ": the model has no '", component,
                 "' component, which building a voice from a recording needs");
    try {
        models_ = std::make_unique<Models>(files, backend);
    } catch (const Error &e) {
        fail(files.path(), ": cannot load the voice models (VoiceEncoder, CAMPPlus, S3Tokenizer): ", e.what());
    }
}

VoiceBuilder::~VoiceBuilder() = default;

VoiceConditionals VoiceBuilder::from_file(Backend &backend, const std::string &path, const VoiceOptions &options,
                                          VoiceTaps *taps) const {
    const audio::AudioBuffer reference = audio::read_audio(path, {kMaxReferenceSeconds}); // its errors name the file
    try {
        return from_audio(backend, reference, options, taps);
    } catch (const Error &e) {
        fail("voice reference '", path, "': ", e.what());
    }
}

VoiceConditionals VoiceBuilder::from_audio(Backend &backend, const audio::AudioBuffer &reference,
                                           const VoiceOptions &options, VoiceTaps *taps) const {
    const float exaggeration = options.exaggeration;
    if (!std::isfinite(exaggeration)) fail("the exaggeration must be a finite number, got ", exaggeration);
    const Models &m = *models_;

    // librosa.load(path, sr=24000) (and Turbo's loudness step unless the caller declines it), then
    // librosa.resample to 16 kHz from the whole 24 kHz signal.
    ReferencePolicy policy = m.reference;
    if (!options.normalize_loudness) policy.loudness_lufs.reset();
    const std::vector<float> ref24 = prepare_reference(reference, policy);
    const std::vector<float> ref16 = audio::resample_soxr_hq(ref24, kS3GenRate, kS3Rate);

    // S3Gen.embed_ref on the first 10 s: mel at 24 kHz; CAMPPlus and the tokenizer on a torchaudio
    // resampling of the same cut.
    const std::vector<float> cut24 = head(ref24, kDecoderCondSamples);
    const std::vector<float> cut16 = audio::resample_torchaudio(cut24, kS3GenRate, kS3Rate);
    const audio::Matrix mel24 = audio::s3gen_mel(cut24);
    const audio::Matrix fbank = audio::campplus_fbank(cut16);
    const audio::Matrix logmel_s3gen = audio::s3tokenizer_log_mel(cut16);
    const s3tokenizer::Tokens s3gen_tokens = m.tokenizer.tokenize(backend, logmel_s3gen.values, logmel_s3gen.cols);

    // T3: prompt tokens of the first 6 s (max_len tokens), speaker embedding of the whole signal.
    const audio::Matrix logmel_t3 =
        audio::s3tokenizer_log_mel(head(ref16, size_t(m.t3_prompt_tokens) * kSamplesPerSpeechToken));
    const s3tokenizer::Tokens t3_tokens =
        m.tokenizer.tokenize(backend, logmel_t3.values, logmel_t3.cols, m.t3_prompt_tokens);
    const audio::Matrix ve_mel = audio::voice_encoder_mel(ref16);
    const voice_encoder::Embedding ve = m.ve.embed(ve_mel.values, ve_mel.rows, {}, backend.threads());

    VoiceConditionals voice;
    voice.variant = m.variant;
    voice.t3.speaker_emb = ve.speaker_emb;
    voice.t3.prompt_tokens = t3_tokens.tokens;
    voice.t3.exaggeration = exaggeration;
    voice.s3gen.xvector = m.campplus.embed(backend, fbank.values, fbank.rows);
    voice.s3gen.prompt_mel = mel24.transposed().values;
    // embed_ref: when the mel is not twice the tokens long, the tokens are cut to mel_frames // 2.
    voice.s3gen.prompt_tokens = s3gen_tokens.tokens;
    if (voice.s3gen.prompt_tokens.size() > size_t(mel24.cols / 2))
        voice.s3gen.prompt_tokens.resize(size_t(mel24.cols / 2));

    if (taps) {
        taps->ref_wav_24k = ref24;
        taps->ref_wav_16k_librosa = ref16;
        taps->ref_wav_16k_torchaudio = cut16;
        taps->s3gen_ref_mel_24k = mel24;
        taps->s3tok_logmel_s3genprompt = logmel_s3gen;
        taps->s3tok_logmel_t3prompt = logmel_t3;
        taps->ve_trim_interval = audio::non_silent_span(ref16);
        taps->ve_trimmed_wav16k.assign(ref16.begin() + taps->ve_trim_interval.begin,
                                       ref16.begin() + taps->ve_trim_interval.end);
        taps->ve_mel = ve_mel;
        taps->campplus_fbank = fbank;
        taps->ve_partial_embeds = ve.partial_embeds;
        taps->ve_partials = ve.partials;
        taps->s3tok_tokens_t3prompt = t3_tokens.tokens;
        taps->s3tok_projection_t3prompt = t3_tokens.projection;
        taps->s3tok_tokens_s3genprompt = s3gen_tokens.tokens;
        taps->s3tok_projection_s3genprompt = s3gen_tokens.projection;
    }
    return voice;
}

std::vector<int32_t> VoiceBuilder::speech_tokens(Backend &backend, const audio::AudioBuffer &source) const {
    check_audio(source, "source");
    // librosa.load(path, sr=16000): one soxr_hq resampling straight from the file's rate.
    const audio::Matrix mel =
        audio::s3tokenizer_log_mel(audio::resample_soxr_hq(source.samples, source.sample_rate, kS3Rate));
    return models_->tokenizer.tokenize(backend, mel.values, mel.cols).tokens;
}

VoiceConditionals builtin_voice(const ModelFiles &files) {
    if (!files.builtin_voice())
        fail(files.path(), ": the model has no built-in voice (no conds.pt / conds.* tensors); give a reference "
                           "recording instead");
    // ModelFiles has checked the types and shapes.
    const BuiltinVoice &b = *files.builtin_voice();
    VoiceConditionals voice;
    voice.variant = files.hparams().variant;
    voice.t3.speaker_emb = to_f32(b.speaker_emb.view());
    voice.t3.prompt_tokens = to_i32(to_i64(b.cond_prompt_speech_tokens.view()));
    voice.t3.exaggeration = to_f32(b.emotion_adv.view()).at(0);
    voice.s3gen.prompt_tokens = to_i32(to_i64(b.prompt_token.view()));
    voice.s3gen.prompt_mel = to_f32(b.prompt_feat.view());
    voice.s3gen.xvector = to_f32(b.embedding.view());
    return voice;
}

// ---------------------------------------------------------------------------------------------------
// Voice files

namespace {

constexpr const char *kFormatKey = "chatterbox.voice.format";
constexpr const char *kFormatName = "chatterbox-voice";
constexpr const char *kVersionKey = "chatterbox.voice.version";
constexpr const char *kChecksumKey = "chatterbox.voice.checksum";
constexpr const char *kVariantKey = "chatterbox.voice.variant";
constexpr int64_t kFormatVersion = 1;
constexpr int64_t kMelBins = 80;

// The tensors of a voice file, in file order (names as in conds.pt).
constexpr const char *kSpeakerEmb = "t3.speaker_emb";                   // f32 (1, 256)
constexpr const char *kT3PromptTokens = "t3.cond_prompt_speech_tokens"; // i32 (1, N)
constexpr const char *kEmotion = "t3.emotion_adv";                      // f32 (1, 1, 1)
constexpr const char *kGenPromptTokens = "gen.prompt_token";            // i32 (1, Np)
constexpr const char *kGenPromptFeat = "gen.prompt_feat";               // f32 (1, F, 80)
constexpr const char *kXvector = "gen.embedding";                       // f32 (1, 192)
constexpr const char *kTensorNames[] = {kSpeakerEmb,      kT3PromptTokens, kEmotion,
                                        kGenPromptTokens, kGenPromptFeat,  kXvector};

// FNV-1a (64 bit) over the tensor bytes in file order: catches damage that leaves values plausible.
class Checksum {
  public:
    void add(const void *data, size_t n) {
        const auto *bytes = static_cast<const uint8_t *>(data);
        for (size_t i = 0; i < n; ++i) hash_ = (hash_ ^ bytes[i]) * 0x100000001b3ull;
    }
    std::string hex() const {
        char text[17];
        std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
        return text;
    }

  private:
    uint64_t hash_ = 0xcbf29ce484222325ull;
};

template <class T>
void add_values(GgufWriter &writer, Checksum &checksum, const char *name, ggml_type type, const Shape &shape,
                const std::vector<T> &values) {
    checksum.add(values.data(), values.size() * sizeof(T));
    writer.add_tensor(name, type, shape, [&values](void *dst) {
        if (!values.empty()) std::memcpy(dst, values.data(), values.size() * sizeof(T));
    });
}

void check_voice_values(const VoiceConditionals &voice) {
    const auto check_finite = [](const std::vector<float> &values, const char *what) {
        for (size_t i = 0; i < values.size(); ++i)
            if (!std::isfinite(values[i])) fail(what, " value ", i, " is not finite (", values[i], ")");
    };
    const auto check_tokens = [](const std::vector<int32_t> &tokens, const char *what) {
        for (size_t i = 0; i < tokens.size(); ++i)
            if (tokens[i] < 0 || tokens[i] >= s3tokenizer::kVocabSize)
                fail(what, " token ", i, " is ", tokens[i], ", outside the speech vocabulary 0..",
                     s3tokenizer::kVocabSize - 1);
    };
    if (voice.t3.speaker_emb.size() != size_t(voice_encoder::kEmbeddingSize))
        fail("the speaker embedding has ", voice.t3.speaker_emb.size(), " values, expected ",
             voice_encoder::kEmbeddingSize);
    if (voice.s3gen.xvector.size() != size_t(campplus::kEmbeddingSize))
        fail("the x-vector has ", voice.s3gen.xvector.size(), " values, expected ", campplus::kEmbeddingSize);
    if (voice.s3gen.prompt_mel.size() % kMelBins != 0)
        fail("the prompt mel has ", voice.s3gen.prompt_mel.size(), " values, not a whole number of ", kMelBins,
             "-bin frames");
    check_finite(voice.t3.speaker_emb, "speaker embedding");
    check_finite({voice.t3.exaggeration}, "exaggeration");
    check_finite(voice.s3gen.prompt_mel, "prompt mel");
    check_finite(voice.s3gen.xvector, "x-vector");
    check_tokens(voice.t3.prompt_tokens, "T3 prompt");
    check_tokens(voice.s3gen.prompt_tokens, "S3Gen prompt");
}

// A shape pattern: -1 stands for any length.
bool shape_matches(const Shape &shape, const Shape &pattern) {
    if (shape.size() != pattern.size()) return false;
    for (size_t i = 0; i < shape.size(); ++i)
        if (pattern[i] != -1 && shape[i] != pattern[i]) return false;
    return true;
}

std::string pattern_str(const Shape &pattern) {
    std::string text = "[";
    for (size_t i = 0; i < pattern.size(); ++i)
        text += (i ? ", " : "") + (pattern[i] == -1 ? std::string("any") : std::to_string(pattern[i]));
    return text + "]";
}

template <class T>
std::vector<T> read_tensor(const GgufFile &file, const char *name, ggml_type type, const Shape &pattern,
                           Checksum &checksum) {
    const TensorView *view = file.find(name);
    if (!view) fail("no tensor ", name);
    if (view->type != type || !shape_matches(view->shape, pattern))
        fail("tensor ", name, " is ", ggml_type_name(view->type), " ", shape_str(view->shape), ", expected ",
             ggml_type_name(type), " ", pattern_str(pattern));
    checksum.add(view->data, view->nbytes);
    std::vector<T> values(size_t(view->numel()));
    if (!values.empty()) std::memcpy(values.data(), view->data, values.size() * sizeof(T));
    return values;
}

VoiceConditionals read_voice(const GgufFile &file) {
    if (!file.has_key(kFormatKey) || file.get_string(kFormatKey) != kFormatName)
        fail("a GGUF file but not a Chatterbox voice (no ", kFormatKey, " = \"", kFormatName, "\")");
    const int64_t version = file.get_int(kVersionKey);
    if (version != kFormatVersion)
        fail("voice format version ", version, ", this build reads version ", kFormatVersion);
    for (const TensorView &t : file.tensors())
        if (std::find(std::begin(kTensorNames), std::end(kTensorNames), t.name) == std::end(kTensorNames))
            fail("unexpected tensor ", t.name);

    Checksum checksum;
    VoiceConditionals voice;
    if (file.has_key(kVariantKey)) voice.variant = parse_variant(file.get_string(kVariantKey));
    voice.t3.speaker_emb =
        read_tensor<float>(file, kSpeakerEmb, GGML_TYPE_F32, {1, voice_encoder::kEmbeddingSize}, checksum);
    voice.t3.prompt_tokens = read_tensor<int32_t>(file, kT3PromptTokens, GGML_TYPE_I32, {1, -1}, checksum);
    voice.t3.exaggeration = read_tensor<float>(file, kEmotion, GGML_TYPE_F32, {1, 1, 1}, checksum).at(0);
    voice.s3gen.prompt_tokens = read_tensor<int32_t>(file, kGenPromptTokens, GGML_TYPE_I32, {1, -1}, checksum);
    voice.s3gen.prompt_mel = read_tensor<float>(file, kGenPromptFeat, GGML_TYPE_F32, {1, -1, kMelBins}, checksum);
    voice.s3gen.xvector = read_tensor<float>(file, kXvector, GGML_TYPE_F32, {1, campplus::kEmbeddingSize}, checksum);

    const std::string stored = file.has_key(kChecksumKey) ? file.get_string(kChecksumKey) : "(none)";
    if (stored != checksum.hex())
        fail("the tensor data does not match its checksum (stored ", stored, ", computed ", checksum.hex(),
             "): the file is damaged");
    check_voice_values(voice);
    return voice;
}

} // namespace

void save_voice(const VoiceConditionals &voice, const std::string &path) {
    try {
        check_voice_values(voice);
    } catch (const Error &e) {
        fail("save_voice '", path, "': not a valid voice: ", e.what());
    }
    const std::vector<float> emotion = {voice.t3.exaggeration};
    const int64_t prompt_frames = int64_t(voice.s3gen.prompt_mel.size()) / kMelBins;

    GgufWriter writer;
    writer.set_string(kFormatKey, kFormatName);
    writer.set_int(kVersionKey, kFormatVersion);
    writer.set_string(kVariantKey, variant_name(voice.variant));
    Checksum checksum;
    add_values(writer, checksum, kSpeakerEmb, GGML_TYPE_F32, {1, voice_encoder::kEmbeddingSize}, voice.t3.speaker_emb);
    add_values(writer, checksum, kT3PromptTokens, GGML_TYPE_I32, {1, int64_t(voice.t3.prompt_tokens.size())},
               voice.t3.prompt_tokens);
    add_values(writer, checksum, kEmotion, GGML_TYPE_F32, {1, 1, 1}, emotion);
    add_values(writer, checksum, kGenPromptTokens, GGML_TYPE_I32, {1, int64_t(voice.s3gen.prompt_tokens.size())},
               voice.s3gen.prompt_tokens);
    add_values(writer, checksum, kGenPromptFeat, GGML_TYPE_F32, {1, prompt_frames, kMelBins}, voice.s3gen.prompt_mel);
    add_values(writer, checksum, kXvector, GGML_TYPE_F32, {1, campplus::kEmbeddingSize}, voice.s3gen.xvector);
    writer.set_string(kChecksumKey, checksum.hex());
    writer.write(path);
}

VoiceConditionals load_voice(const std::string &path) {
    const GgufFile file(path); // its errors name the file
    try {
        return read_voice(file);
    } catch (const Error &e) {
        fail("voice file '", path, "': ", e.what());
    }
}

bool is_voice_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    if (!in.read(magic, sizeof magic) || std::memcmp(magic, "GGUF", sizeof magic) != 0) return false;
    in.close();
    try {
        const GgufFile file(path);
        return file.has_key(kFormatKey) && file.get_string(kFormatKey) == kFormatName;
    } catch (const Error &) {
        return false; // a damaged GGUF is not a voice file; load_voice would say what is wrong
    }
}

} // namespace chatterbox
