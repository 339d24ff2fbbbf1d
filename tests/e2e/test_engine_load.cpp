// needs: synthetic-weights
// Loading models through the C API and the CLI: missing, incomplete or foreign models are model
// errors that name what is wrong; bad engine parameters are invalid arguments; a model without a
// built-in voice (the synthetic folder) needs one given.

#include "chatterbox/chatterbox.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

using namespace chatterbox;

namespace {

void expect_failure(chatterbox_status got, chatterbox_status expected, const std::string &words) {
    EXPECT_EQ(got, expected) << chatterbox_last_error();
    EXPECT_TRUE(test::contains(chatterbox_last_error(), words));
}

TEST(EngineLoad, MissingOrIncompleteModelsAreModelErrors) {
    chatterbox_engine_params ep = chatterbox_engine_default_params();
    chatterbox_engine *e = nullptr;
    expect_failure(chatterbox_engine_load(&ep, &e), CHATTERBOX_ERROR_INVALID_ARGUMENT, "model_path is NULL");
    ep.model_path = "/no/such/model";
    expect_failure(chatterbox_engine_load(&ep, &e), CHATTERBOX_ERROR_MODEL, "/no/such/model");
    const std::string synthetic = test::synthetic_dir(); // the weights without tokenizer.json
    ep.model_path = synthetic.c_str();
    expect_failure(chatterbox_engine_load(&ep, &e), CHATTERBOX_ERROR_MODEL, "tokenizer");
    const std::string not_a_model = test::golden_path("");
    ep.model_path = not_a_model.c_str();
    expect_failure(chatterbox_engine_load(&ep, &e), CHATTERBOX_ERROR_MODEL, "no T3 checkpoint (t3_cfg.safetensors");
    ep.model_path = synthetic.c_str();
    ep.backend = "no-such-backend";
    expect_failure(chatterbox_engine_load(&ep, &e), CHATTERBOX_ERROR_INVALID_ARGUMENT, "no-such-backend");
    ep.backend = "cpu";
    ep.threads = -1;
    expect_failure(chatterbox_engine_load(&ep, &e), CHATTERBOX_ERROR_INVALID_ARGUMENT, "threads");
    EXPECT_EQ(e, nullptr);
}

TEST(EngineLoad, ModelWithoutBuiltinVoiceNeedsAVoice) {
    chatterbox_engine_params ep = chatterbox_engine_default_params();
    const std::string model = test::synthetic_model_dir();
    ep.model_path = model.c_str();
    ep.backend = "cpu";
    chatterbox_engine *engine = nullptr;
    ASSERT_EQ(chatterbox_engine_load(&ep, &engine), CHATTERBOX_OK) << chatterbox_last_error();
    chatterbox_voice *v = nullptr;
    expect_failure(chatterbox_voice_builtin(engine, 0.5f, &v), CHATTERBOX_ERROR_MODEL, "no built-in voice");
    chatterbox_synthesis_params p = chatterbox_synthesis_default_params();
    p.max_new_tokens = 2;
    chatterbox_audio audio;
    expect_failure(chatterbox_synthesize(engine, "Hi.", nullptr, &p, &audio), CHATTERBOX_ERROR_MODEL,
                   "no built-in voice");
    chatterbox_engine_free(engine);

    const std::string out = test::temp_dir("engine_load") + "/unused.wav";
    const test::ToolRun run =
        test::run_tool("chatterbox", {"-m", model, "--max-tokens", "2", "-o", out, "Hello there."});
    EXPECT_EQ(run.exit_code, 1) << run.err;
    EXPECT_TRUE(test::contains(run.err, "no built-in voice: pass --voice"));
    EXPECT_FALSE(std::filesystem::exists(out));
}

} // namespace
