// needs: tiny-model tiny-multilingual-model
// Chatterbox Multilingual end to end on its tiny synthetic model (Llama T3 with the 2454-token text
// vocabulary, the golden set's tokenizer, a small Cangjie table): the golden French case's tokens, one
// sentence spoken in each of the 23 languages with its tag after [START], clear errors for a missing or
// unknown language (and for a language given to the English model), cross-lingual cloning (an English
// recording speaking French and Japanese), the last-token trim, and the C API's language field.

#include "chatterbox/chatterbox.h"
#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/t3/generate.h"
#include "support/test_support.h"
#include "text/languages.h"
#include "text/punc_norm.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>

namespace chatterbox {
namespace {

// One sentence per language (for zh, characters of tests/data/mtl/Cangjie5_TC.json).
const std::map<std::string, std::string> &sentences() {
    static const std::map<std::string, std::string> s = {
        {"ar", "مرحبا بالعالم."},   {"da", "Hej verden."},    {"de", "Hallo Welt."},      {"el", "Γεια σου κόσμε."},
        {"en", "Hello world."},     {"es", "Hola mundo."},    {"fi", "Hei maailma."},     {"fr", "Bonjour le monde."},
        {"he", "שלום עולם."},       {"hi", "नमस्ते दुनिया।"},    {"it", "Ciao mondo."},      {"ja", "今日は東京です。"},
        {"ko", "안녕하세요 세계."}, {"ms", "Helo dunia."},    {"nl", "Hallo wereld."},    {"no", "Hei verden."},
        {"pl", "Witaj świecie."},   {"pt", "Olá mundo."},     {"ru", "Привет, мир."},     {"sv", "Hej världen."},
        {"sw", "Habari dunia."},    {"tr", "Merhaba dünya."}, {"zh", "你好，我是中文。"},
    };
    return s;
}

const PipelineModel &multilingual() {
    static const PipelineModel engine({test::tiny_multilingual_model_path(), BackendOptions{"cpu", 2}});
    return engine;
}

SynthesisOptions short_request(const std::string &language) {
    SynthesisOptions options;
    options.params.sampling.max_new_tokens = 12; // random weights rarely stop on their own
    options.params.sampling.seed = 11;
    options.params.language = language;
    return options;
}

void expect_speech(const SynthesisResult &result) {
    ASSERT_GT(result.wave.size(), 0u);
    EXPECT_EQ(result.sample_rate, 24000);
    for (size_t i = 0; i < result.wave.size(); ++i) ASSERT_TRUE(std::isfinite(result.wave[i])) << i;
}

TEST(MultilingualModel, TextFrontEndGivesTheGoldenTokens) {
    const PipelineModel &engine = multilingual();
    EXPECT_EQ(engine.files().hparams().variant, Variant::multilingual);
    EXPECT_EQ(engine.t3().hparams().text_vocab, 2454);
    std::ifstream in(test::mtl_golden_path("index.json"));
    const nlohmann::json index = nlohmann::json::parse(in);
    const std::string text = index["case"]["text"], language = index["case"]["language_id"];
    EXPECT_EQ(text::punc_norm(text, engine.text().punctuation()), index["text_normalized"].get<std::string>());
    const std::vector<int32_t> framed = engine.text().t3_tokens(text, language);
    // t3_text_tokens holds the CFG pair: two equal rows of [START] ids [STOP].
    const std::vector<int32_t> pair = test::read_token_ids(test::mtl_golden_path("t3_text_tokens.npy"));
    ASSERT_EQ(pair.size(), 2 * framed.size());
    EXPECT_EQ(framed, std::vector<int32_t>(pair.begin(), pair.begin() + std::ptrdiff_t(framed.size())));
    EXPECT_EQ(std::vector<int32_t>(framed.begin() + 1, framed.end() - 1),
              test::read_token_ids(test::mtl_golden_path("text_tokens.npy")));
}

TEST(MultilingualModel, EveryLanguageSpeaksOneSentenceWithItsTag) {
    const PipelineModel &engine = multilingual();
    PipelineSession session(engine);
    ASSERT_EQ(sentences().size(), text::supported_languages().size());
    for (const text::Language &language : text::supported_languages()) {
        SCOPED_TRACE(language.code);
        const std::string &sentence = sentences().at(language.code);
        const std::vector<int32_t> framed = engine.text().t3_tokens(sentence, language.code);
        ASSERT_GE(framed.size(), 4u);
        EXPECT_EQ(framed[0], engine.t3().hparams().start_text_token);
        EXPECT_EQ(framed[1], *engine.text().bpe().token_to_id(std::string("[") + language.code + "]"));
        EXPECT_EQ(framed.back(), engine.t3().hparams().stop_text_token);
        expect_speech(session.synthesize(sentence, engine.builtin_voice(0.5f), short_request(language.code)));
    }
}

TEST(MultilingualModel, MissingUnknownAndMisplacedLanguagesAreClearErrors) {
    PipelineSession session(multilingual());
    const VoiceConditionals voice = multilingual().builtin_voice(0.5f);
    test::expect_error([&] { session.synthesize("Hola.", voice, short_request("")); },
                       {"needs a language", "ar, da, de", "zh"});
    test::expect_error([&] { session.synthesize("Hola.", voice, short_request("xx")); },
                       {"unsupported language \"xx\"", "ar, da, de", "zh"});
    const PipelineModel english({test::tiny_model_path(), BackendOptions{"cpu", 1}});
    PipelineSession english_session(english);
    test::expect_error([&] { english_session.synthesize("Hello.", english.builtin_voice(0.5f), short_request("fr")); },
                       {"english model takes no language", "fr (French)"});
    // Upper case is accepted, as mtl_tts.py lowers the code.
    expect_speech(session.synthesize("Hola.", voice, short_request("ES")));
}

TEST(MultilingualModel, CrossLingualCloningAndTheLastTokenTrim) {
    const PipelineModel &engine = multilingual();
    PipelineSession session(engine);
    // An English recording (the English golden voice) speaking French and Japanese.
    const VoiceConditionals english_speaker = session.voice_from_file(test::golden_path("ref_voice.wav"), 0.5f);
    EXPECT_EQ(english_speaker.variant, Variant::multilingual);
    const PipelineModel english({test::tiny_model_path(), BackendOptions{"cpu", 1}});
    for (const char *language : {"fr", "ja"}) {
        SCOPED_TRACE(language);
        SynthesisOptions options = short_request(language);
        options.params.split_text = false;
        options.params.sampling.guards = {}; // every token kept: the audio length is the token count's
        options.params.sampling.ignore_eos = true;
        const SynthesisResult result = session.synthesize(sentences().at(language), english_speaker, options);
        expect_speech(result);
        ASSERT_GT(result.speech_tokens, 1);
        // mtl_tts.py: wav[: max(1, n - 1) * 960]; one token less than the flow made.
        EXPECT_EQ(result.wave.size(), size_t(result.speech_tokens - 1) * 960);
    }
    // A voice built by the English model serves the multilingual one (the same conditioning).
    expect_speech(session.synthesize("Bonjour.", english.builtin_voice(0.5f), short_request("fr")));
}

TEST(MultilingualModel, TokensTheFlowCannotEmbedAreFiltered) {
    const t3::HParams &hp = multilingual().t3().hparams();
    // The span between SOS and EOS keeps only speech units: 6563..8193 would crash the flow's embedding.
    const std::vector<int32_t> generated = {hp.start_speech_token, 5, 7000, 6560, 8193, 12, hp.stop_speech_token, 9};
    EXPECT_EQ(t3::drop_invalid_tokens(generated, hp), (std::vector<int32_t>{5, 6560, 12}));
}

TEST(MultilingualModel, CApiTakesTheLanguage) {
    ASSERT_EQ(chatterbox_language_count(), 23u);
    EXPECT_STREQ(chatterbox_language_code(0), "ar");
    EXPECT_STREQ(chatterbox_language_name(22), "Chinese");
    EXPECT_EQ(chatterbox_language_code(23), nullptr);
    chatterbox_engine_params ep = chatterbox_engine_default_params();
    const std::string path = test::tiny_multilingual_model_path();
    ep.model_path = path.c_str();
    ep.threads = 2;
    chatterbox_engine *engine = nullptr;
    ASSERT_EQ(chatterbox_engine_load(&ep, &engine), CHATTERBOX_OK) << chatterbox_last_error();
    EXPECT_STREQ(chatterbox_engine_variant(engine), "multilingual");
    chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
    EXPECT_EQ(p.language, nullptr);
    p.max_new_tokens = 10;
    chatterbox_audio audio;
    EXPECT_EQ(chatterbox_synthesize(engine, "Hallo Welt.", nullptr, &p, &audio), CHATTERBOX_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(chatterbox_last_error()).find("needs a language"), std::string::npos);
    p.language = "de";
    ASSERT_EQ(chatterbox_synthesize(engine, "Hallo Welt.", nullptr, &p, &audio), CHATTERBOX_OK)
        << chatterbox_last_error();
    EXPECT_GT(audio.n_samples, 0u);
    chatterbox_audio_free(&audio);
    chatterbox_engine_free(engine);
}

} // namespace
} // namespace chatterbox
