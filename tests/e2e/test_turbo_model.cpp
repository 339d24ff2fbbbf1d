// needs: tiny-model tiny-turbo-model tiny-nano-model
// Turbo and Nano end to end on their tiny synthetic models (GPT-2 T3, mean-flow S3Gen, the golden
// GPT-2 tokenizer): the variant comes from the model, the text front end gives the golden case's
// tokens, the built-in, cloned and saved voices speak, voices of another variant are refused by
// name, a reference of 5 s or less is refused naming the minimum, and streaming and long text work
// as for English.

#include "audio/audio_file.h"
#include "chatterbox/chatterbox.h"
#include "models/chatterbox/convert.h"
#include "models/chatterbox/pipeline_session.h"
#include "support/speech_checks.h"
#include "support/test_support.h"
#include "text/punc_norm.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace chatterbox {
namespace {

nlohmann::json golden_index() {
    std::ifstream in(test::turbo_golden_path("index.json"));
    return nlohmann::json::parse(in);
}

SynthesisOptions short_request() { return test::bounded_request(30, 7); }

using test::expect_speech;

TEST(TurboModel, TextFrontEndGivesTheGoldenTokens) {
    const PipelineModel engine({test::tiny_turbo_model_path(), BackendOptions{"cpu", 1}, components(Component::text)});
    const nlohmann::json index = golden_index();
    const std::string text = index["case"]["text"];
    EXPECT_EQ(text::punc_norm(text, engine.text().punctuation()), index["text_normalized"].get<std::string>());
    EXPECT_EQ(engine.text().t3_tokens(text), test::read_token_ids(test::turbo_golden_path("text_tokens.npy")));
    EXPECT_EQ(engine.text().framing_tokens(), 0);
    // A tag outside the vocabulary is text like any other; a known one is a single token.
    const std::vector<int32_t> unknown = engine.text().tokens("[notatag]");
    EXPECT_GT(unknown.size(), 1u);
    EXPECT_EQ(engine.text().tokens("[laugh]").size(), 1u);
}

TEST(TurboModel, TurboAndNanoSpeakWithBuiltinClonedAndSavedVoices) {
    for (const auto &[path, variant] :
         {std::pair{test::tiny_turbo_model_path(), Variant::turbo}, {test::tiny_nano_model_path(), Variant::nano}}) {
        SCOPED_TRACE(variant_name(variant));
        const PipelineModel engine({path, BackendOptions{"cpu", 2}});
        EXPECT_EQ(engine.files().hparams().variant, variant);
        EXPECT_NE(engine.description().find(variant_name(variant)), std::string::npos);
        PipelineSession session(engine);
        const SynthesisOptions options = short_request();

        const SynthesisResult builtin = session.synthesize("Hello there [laugh].", engine.builtin_voice(0.5f), options);
        expect_speech(builtin);
        // The same seed, text and voice give the same audio.
        EXPECT_EQ(session.synthesize("Hello there [laugh].", engine.builtin_voice(0.5f), options).wave, builtin.wave);

        const VoiceConditionals cloned = session.voice_from_file(test::turbo_golden_path("ref_voice.wav"), 0.5f);
        EXPECT_EQ(cloned.variant, variant);
        EXPECT_EQ(cloned.t3.prompt_tokens.size(), 375u); // 15 s at 25 Hz
        const std::string voice_file = test::temp_dir("turbo-voice") + "/ref.voice";
        save_voice(cloned, voice_file);
        const VoiceConditionals loaded = load_voice(voice_file);
        EXPECT_EQ(loaded.variant, variant);
        EXPECT_EQ(session.synthesize("Hello there.", loaded, options).wave,
                  session.synthesize("Hello there.", cloned, options).wave);
    }
}

TEST(TurboModel, VoicesOfAnotherVariantAndShortReferencesAreRefused) {
    const PipelineModel turbo({test::tiny_turbo_model_path(), BackendOptions{"cpu", 2}});
    const PipelineModel english({test::tiny_model_path(), BackendOptions{"cpu", 1}});
    const PipelineModel nano({test::tiny_nano_model_path(), BackendOptions{"cpu", 1}});
    PipelineSession session(turbo);
    const SynthesisOptions options = short_request();
    test::expect_error([&] { session.synthesize("Hello.", english.builtin_voice(0.5f), options); },
                       {"built with a english model", "this turbo model", "build it again"});
    // Nano builds voices as Turbo does: its voices serve Turbo.
    expect_speech(session.synthesize("Hello.", nano.builtin_voice(0.5f), options));
    PipelineSession english_session(english);
    test::expect_error([&] { english_session.synthesize("Hello.", turbo.builtin_voice(0.5f), options); },
                       {"built with a turbo model", "this english model"});

    audio::AudioBuffer short_reference = audio::read_audio(test::turbo_golden_path("ref_voice.wav"));
    short_reference.samples.resize(size_t(5 * short_reference.sample_rate));
    test::expect_error([&] { session.voice_from_audio(short_reference, 0.5f); }, "5");
}

// The tiny Turbo model through the C API on two threads; nullptr when it fails to load.
chatterbox_engine *load_tiny_turbo() {
    chatterbox_engine_params ep = chatterbox_engine_default_params();
    const std::string path = test::tiny_turbo_model_path();
    ep.model_path = path.c_str();
    ep.threads = 2;
    chatterbox_engine *engine = nullptr;
    chatterbox_engine_load(&ep, &engine);
    return engine;
}

TEST(TurboModel, CApiTellsTheVariantAndSpeaksWithTheModelsDefaults) {
    chatterbox_engine *engine = load_tiny_turbo();
    ASSERT_NE(engine, nullptr) << chatterbox_last_error();
    EXPECT_STREQ(chatterbox_engine_variant(engine), "turbo");
    EXPECT_STREQ(chatterbox_engine_variant(nullptr), "");
    chatterbox_voice *voice = nullptr;
    ASSERT_EQ(chatterbox_voice_builtin(engine, 0.5f, &voice), CHATTERBOX_OK) << chatterbox_last_error();
    chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
    p.max_new_tokens = 20;
    chatterbox_audio audio;
    ASSERT_EQ(chatterbox_synthesize(engine, "Hi there.", voice, &p, &audio), CHATTERBOX_OK) << chatterbox_last_error();
    EXPECT_GT(audio.n_samples, 0u);
    chatterbox_audio_free(&audio);
    chatterbox_voice_free(voice);
    chatterbox_engine_free(engine);
}

// norm_loudness=False of tts_turbo.py: the reference as recorded gives other conditionals than the
// default -27 LUFS normalisation, through the engine-level and the session-level call alike.
TEST(TurboModel, CApiBuildsAVoiceWithoutLoudnessNormalisation) {
    chatterbox_engine *engine = load_tiny_turbo();
    ASSERT_NE(engine, nullptr) << chatterbox_last_error();
    chatterbox_session *session = nullptr;
    ASSERT_EQ(chatterbox_session_new(engine, 0, &session), CHATTERBOX_OK) << chatterbox_last_error();
    const std::string reference = test::turbo_golden_path("ref_voice.wav");
    const std::filesystem::path dir = test::temp_dir("turbo-loudness");
    int saved = 0;
    auto saved_voice = [&](const chatterbox_voice_params *params, bool on_session) {
        chatterbox_voice *voice = nullptr;
        const chatterbox_status status =
            on_session ? chatterbox_session_voice_from_audio_file(session, reference.c_str(), params, &voice)
                       : chatterbox_voice_from_audio_file_ex(engine, reference.c_str(), params, &voice);
        EXPECT_EQ(status, CHATTERBOX_OK) << chatterbox_last_error();
        const std::string file = (dir / ("voice" + std::to_string(++saved))).string();
        EXPECT_EQ(chatterbox_voice_save(voice, file.c_str()), CHATTERBOX_OK) << chatterbox_last_error();
        chatterbox_voice_free(voice);
        std::ifstream in(file, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    chatterbox_voice_params as_recorded = chatterbox_voice_default_params();
    EXPECT_EQ(as_recorded.norm_loudness, 1);
    EXPECT_EQ(as_recorded.exaggeration, 0.5f);
    as_recorded.norm_loudness = 0;
    const auto normalised = saved_voice(nullptr, false);
    EXPECT_EQ(saved_voice(nullptr, true), normalised);
    EXPECT_NE(saved_voice(&as_recorded, false), normalised);
    EXPECT_EQ(saved_voice(&as_recorded, true), saved_voice(&as_recorded, false));

    chatterbox_voice *voice = nullptr;
    as_recorded.norm_loudness = 2;
    EXPECT_EQ(chatterbox_session_voice_from_audio_file(session, reference.c_str(), &as_recorded, &voice),
              CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(test::contains(chatterbox_last_error(), "norm_loudness is 2, expected 0 or 1"));
    EXPECT_EQ(chatterbox_session_voice_from_audio_file(session, "/no/such.wav", nullptr, &voice), CHATTERBOX_ERROR_IO);
    chatterbox_session_free(session);
    chatterbox_engine_free(engine);
}

TEST(TurboModel, ConvertedGgufHoldsConv1dWeightsTransposedAndSpeaksTheSame) {
    const std::string dir = test::temp_dir("turbo-convert");
    const std::string f32 = dir + "/f32.gguf", q8 = dir + "/q8_0.gguf";
    convert_model(test::tiny_turbo_model_path(), f32, {});
    ConvertOptions quantised;
    quantised.matrix_type = GGML_TYPE_Q8_0;
    convert_model(f32, q8, quantised); // a GGUF's transposed weights go through as they are
    for (const std::string &path : {f32, q8}) {
        const ModelFiles files = ModelFiles::open(path);
        const TensorView *fused = files.weights().find("t3.tfmr.h.0.attn.c_attn.weight_t");
        ASSERT_NE(fused, nullptr) << path;
        EXPECT_EQ(fused->shape, (Shape{3 * 128, 128})); // Linear's (out, in)
        EXPECT_EQ(fused->type, path == q8 ? GGML_TYPE_Q8_0 : GGML_TYPE_F32);
        EXPECT_EQ(files.weights().find("t3.tfmr.h.0.attn.c_attn.weight"), nullptr);
    }
    const SynthesisOptions options = short_request();
    const auto speak = [&](const std::string &path) {
        const PipelineModel engine({path, BackendOptions{"cpu", 2}});
        PipelineSession session(engine);
        return session.synthesize("Hello there.", engine.builtin_voice(0.5f), options);
    };
    const SynthesisResult official_layout = speak(test::tiny_turbo_model_path());
    EXPECT_EQ(speak(f32).wave, official_layout.wave); // the same f32 values, transposed at load or by the converter
    expect_speech(speak(q8));
}

TEST(TurboModel, StreamsAndSplitsLongText) {
    const PipelineModel engine({test::tiny_turbo_model_path(), BackendOptions{"cpu", 2}});
    PipelineSession session(engine);
    SynthesisOptions options = short_request();
    options.stream = true;
    std::vector<float> streamed;
    size_t chunks = 0;
    options.on_chunk = [&](const float *samples, size_t n) {
        streamed.insert(streamed.end(), samples, samples + n);
        ++chunks;
        return true;
    };
    const SynthesisResult result =
        session.synthesize("This is the first sentence. Here comes a second one! And a third, to finish?",
                           engine.builtin_voice(0.5f), options);
    expect_speech(result);
    EXPECT_EQ(result.pieces, 3);
    EXPECT_GT(chunks, 3u);
    EXPECT_EQ(streamed, result.wave);
}

} // namespace
} // namespace chatterbox
