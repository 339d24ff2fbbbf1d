// needs: tiny-model
// The tiny synthetic model: its file is what the hyper-parameters and the WEIGHTS.md rule say, and
// a PipelineModel loads it and speaks with the built-in voice and with a cloned one, in seconds.

#include "audio/audio_file.h"
#include "models/chatterbox/convert.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/synthetic_weights.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace chatterbox {
namespace {

std::string read_text(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(TinyModel, FileHoldsTheTinyHparamsTokenizerVoiceAndRuleValues) {
    const ModelFiles files = ModelFiles::open(test::tiny_model_path());
    const ModelHparams tiny = synthetic::tiny_hparams();
    size_t differing = 0; // compared through the tables: every field, no hand-written list
    visit_component_hparams(files.hparams(), [&](const auto &table, const auto &component) {
        visit_component_hparams(tiny, [&](const auto &, const auto &want) {
            if constexpr (std::is_same_v<decltype(component), decltype(want)>)
                for (const auto &field : table)
                    std::visit(
                        [&](auto member) {
                            if (!(component.*member == want.*member)) {
                                ++differing;
                                ADD_FAILURE() << field.key;
                            }
                        },
                        field.member);
        });
    });
    EXPECT_EQ(differing, 0u);
    EXPECT_EQ(files.components(), (std::vector<std::string>{"ve", "t3", "s3gen"}));
    EXPECT_EQ(files.tokenizer_json(), read_text(test::golden_path("tokenizer.json")));
    ASSERT_TRUE(files.builtin_voice().has_value());

    // Every weight is the WEIGHTS.md value for its checkpoint name, shape and the seed.
    size_t checked = 0;
    for (const ModelComponent &component : model_components())
        for (const std::string &name : files.weights().names_with_prefix(component.prefix)) {
            const TensorView &t = files.weights().get(name);
            std::vector<uint8_t> want(tensor_nbytes(t.type, t.shape));
            synthetic::fill_tensor(name.substr(std::strlen(component.prefix)), t.shape, synthetic::kDefaultSeed,
                                   want.data());
            ASSERT_EQ(std::memcmp(t.data, want.data(), want.size()), 0) << name;
            ++checked;
        }
    EXPECT_GT(checked, 500u);
}

TEST(TinyModel, ConvertsToQ8AndKeepsItsHparams) {
    const std::string out = test::temp_dir("tiny") + "/model-q8.gguf";
    ConvertOptions options;
    options.matrix_type = GGML_TYPE_Q8_0;
    convert_model(test::tiny_model_path(), out, options);
    const ModelFiles converted = ModelFiles::open(out);
    EXPECT_EQ(converted.hparams().t3.hidden, synthetic::tiny_hparams().t3.hidden);
    EXPECT_EQ(converted.hparams().hift.base_channels, synthetic::tiny_hparams().hift.base_channels);
    EXPECT_EQ(converted.weights().size(), ModelFiles::open(test::tiny_model_path()).weights().size());
}

TEST(TinyModel, SpeaksWithTheBuiltinAndAClonedVoice) {
    const auto start = std::chrono::steady_clock::now();
    const PipelineModel engine({test::tiny_model_path(), BackendOptions{"cpu", 1}});
    PipelineSession session(engine);
    SynthesisOptions options;
    options.params.sampling.max_new_tokens = 50; // random weights rarely stop on their own
    for (const bool cloned : {false, true}) {
        const VoiceConditionals voice =
            cloned ? session.voice_from_file(test::golden_path("ref_voice.wav"), 0.5f) : engine.builtin_voice(0.5f);
        const SynthesisResult result = session.synthesize("Hello there.", voice, options);
        ASSERT_GT(result.wave.size(), 0u);
        EXPECT_EQ(result.sample_rate, 24000);
        EXPECT_GT(result.speech_tokens, 0);
        for (size_t i = 0; i < result.wave.size(); ++i) ASSERT_TRUE(std::isfinite(result.wave[i])) << i;
    }
    std::printf("tiny model: load and two sentences in %.2f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

} // namespace
} // namespace chatterbox
