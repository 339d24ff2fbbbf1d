// The multilingual official folder, on a tiny model written in its published layout (synthetic
// weights by the WEIGHTS.md rule; v2 and v3 T3 from different seeds; the golden tokenizer, Cangjie
// table and conds.pt): choosing v2 or v3 (ModelOpenOptions::t3_model, the engine, the C API, the GGUF
// conversion of the choice) with its errors, and the published torch state dicts ve.pt / s3gen.pt
// (tests/support/torch_state_dict.h) read bit-equal to their safetensors twins: every tensor, a voice
// from a recording, and the speech (the flow's mel, then HiFT) synthesised with it.

#include "chatterbox/chatterbox.h"
#include "core/error.h"
#include "models/chatterbox/convert.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/pipeline_session.h"
#include "models/chatterbox/synthetic_weights.h"
#include "support/test_support.h"
#include "support/torch_state_dict.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

namespace chatterbox {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kV2Seed = 0x5EEDC0DE, kV3Seed = 0xC0FFEE;
const char *const kProbe = "tfmr.layers.0.self_attn.q_proj.weight"; // a T3 weight, without "t3."

template <class Body> void expect_error(Body &&body, const std::vector<std::string> &parts) {
    try {
        body();
        ADD_FAILURE() << "no error thrown; expected one mentioning " << parts.front();
    } catch (const Error &e) {
        for (const auto &part : parts) EXPECT_TRUE(test::contains(e.what(), part));
    }
}

// The folder's files but `leave_out`, hard-linked into a new folder.
std::string linked_copy(const std::string &from, const std::string &to, const std::vector<std::string> &leave_out) {
    fs::create_directories(to);
    for (const auto &entry : fs::directory_iterator(from)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && std::find(leave_out.begin(), leave_out.end(), name) == leave_out.end())
            fs::create_hard_link(entry.path(), fs::path(to) / name);
    }
    return to;
}

// The tiny model as an official folder: a folder's head counts are the official ones (no tensor shape
// tells them), so the S3Tokenizer's width is a multiple of its 20 heads.
ModelHparams tiny_folder_hparams(Variant variant) {
    ModelHparams hp = synthetic::tiny_hparams(variant);
    hp.s3tokenizer.state = 20 * 8;
    return hp;
}

// The tiny multilingual folder with both T3 checkpoints, written once for every test.
const std::string &tiny_folder() {
    static const std::string dir = [] {
        const std::string root = (fs::temp_directory_path() / "chatterbox-tests" / "mtl-folder").string();
        fs::remove_all(root);
        const std::string folder = root + "/both", v3_seed = root + "/v3-seed";
        const ModelHparams hp = tiny_folder_hparams(Variant::multilingual);
        synthetic::write_synthetic_folder(folder, hp, kV2Seed);
        synthetic::write_synthetic_folder(v3_seed, hp, kV3Seed);
        // The writer links v3 to v2; v3 becomes the other seed's T3.
        fs::remove(folder + "/t3_mtl23ls_v3.safetensors");
        fs::rename(v3_seed + "/t3_mtl23ls_v2.safetensors", folder + "/t3_mtl23ls_v3.safetensors");
        fs::remove_all(v3_seed);
        for (const char *file : {"grapheme_mtl_merged_expanded_v1.json", "Cangjie5_TC.json", "conds.pt"})
            fs::copy_file(test::mtl_golden_path(file), folder + "/" + file);
        return folder;
    }();
    return dir;
}

// The probe weight the synthetic rule gives for seed.
std::vector<float> probe_values(const WeightStore &store, uint64_t seed) {
    const TensorView &t = store.get(std::string("t3.") + kProbe);
    std::vector<float> values(size_t(t.numel()));
    synthetic::fill_tensor(kProbe, t.shape, seed, values.data());
    return values;
}

void expect_t3_of_seed(const ModelFiles &files, uint64_t seed) {
    const std::vector<float> got = to_f32(files.weights().get(std::string("t3.") + kProbe));
    EXPECT_EQ(got, probe_values(files.weights(), seed));
    EXPECT_NE(got, probe_values(files.weights(), seed == kV2Seed ? kV3Seed : kV2Seed));
}

TEST(MtlFolder, LoadsV2ByDefaultAndV3WhenAsked) {
    const ModelFiles v2 = ModelFiles::open(tiny_folder());
    EXPECT_EQ(v2.hparams().variant, Variant::multilingual);
    EXPECT_EQ(v2.t3_model(), "v2");
    expect_t3_of_seed(v2, kV2Seed);
    expect_t3_of_seed(ModelFiles::open(tiny_folder(), {"v2"}), kV2Seed);
    // mtl_tts.py's names: "v3", the file's stem and its name.
    for (const std::string name : {"v3", "t3_mtl23ls_v3", "t3_mtl23ls_v3.safetensors"}) {
        SCOPED_TRACE(name);
        const ModelFiles v3 = ModelFiles::open(tiny_folder(), {name});
        EXPECT_EQ(v3.t3_model(), "v3");
        expect_t3_of_seed(v3, kV3Seed);
    }
    // A folder with v3 alone loads it by default.
    const std::string v3_only =
        linked_copy(tiny_folder(), test::temp_dir("mtl") + "/v3-only", {"t3_mtl23ls_v2.safetensors"});
    EXPECT_EQ(ModelFiles::open(v3_only).t3_model(), "v3");
}

TEST(MtlFolder, AskingForAT3TheModelLacksIsAnErrorNamingTheFiles) {
    const std::string dir = test::temp_dir("mtl");
    expect_error(
        [&] { ModelFiles::open(tiny_folder(), {"v4"}); },
        {tiny_folder(), "unknown t3_model \"v4\"", "v2 (t3_mtl23ls_v2.safetensors)", "v3 (t3_mtl23ls_v3.safetensors)"});
    const std::string v2_only = linked_copy(tiny_folder(), dir + "/v2-only", {"t3_mtl23ls_v3.safetensors"});
    EXPECT_EQ(ModelFiles::open(v2_only).t3_model(), "v2");
    expect_error([&] { ModelFiles::open(v2_only, {"v3"}); },
                 {v2_only, "t3_model \"v3\" asks for t3_mtl23ls_v3.safetensors", "does not hold",
                  "v2 (t3_mtl23ls_v2.safetensors)"});
    const std::string v3_only = linked_copy(tiny_folder(), dir + "/v3-only", {"t3_mtl23ls_v2.safetensors"});
    expect_error([&] { ModelFiles::open(v3_only, {"v2"}); }, {v3_only, "t3_mtl23ls_v2.safetensors", "does not hold"});

    const std::string english = dir + "/english";
    synthetic::write_synthetic_folder(english, tiny_folder_hparams(Variant::english));
    EXPECT_TRUE(ModelFiles::open(english).t3_model().empty());
    expect_error([&] { ModelFiles::open(english, {"v3"}); },
                 {english, "t3_model \"v3\"", "multilingual model's T3 checkpoints", "t3_mtl23ls_v3.safetensors",
                  "this is the english model, which has one T3"});

    // The C API: CHATTERBOX_ERROR_MODEL with the message.
    chatterbox_engine_params params = chatterbox_engine_default_params();
    EXPECT_EQ(params.t3_model, nullptr);
    params.model_path = v2_only.c_str();
    params.backend = "cpu";
    params.t3_model = "v3";
    chatterbox_engine *engine = nullptr;
    EXPECT_EQ(chatterbox_engine_load(&params, &engine), CHATTERBOX_ERROR_MODEL);
    EXPECT_EQ(engine, nullptr);
    EXPECT_TRUE(test::contains(chatterbox_last_error(), "t3_mtl23ls_v3.safetensors"));

    // The CLI and the server: a non-zero exit with the message, no audio.
    const test::ToolRun cli = test::run_tool(
        "chatterbox", {"-m", v2_only, "--t3-model", "v3", "-l", "fr", "-o", dir + "/x.wav", "-q", "Bonjour."});
    EXPECT_NE(cli.exit_code, 0);
    EXPECT_TRUE(test::contains(cli.err, "t3_mtl23ls_v3.safetensors"));
    EXPECT_FALSE(fs::exists(dir + "/x.wav"));
    const test::ToolRun server =
        test::run_tool("chatterbox-server", {"-m", english, "--t3-model", "v3", "--port", "0"});
    EXPECT_NE(server.exit_code, 0);
    EXPECT_TRUE(test::contains(server.err, "this is the english model"));

    // chatterbox-golden reads the golden case's "t3_model" (v3): a folder without v3 fails its stages.
    const test::ToolRun golden = test::run_tool(
        "chatterbox-golden", {"--case", test::mtl_golden_path("index.json"), "--inputs", test::mtl_golden_path(""),
                              "--model", v2_only, "--out", dir + "/golden", "--only", "hift"});
    EXPECT_EQ(golden.exit_code, 1);
    EXPECT_TRUE(test::contains(golden.err, "t3_model \"v3\" asks for t3_mtl23ls_v3.safetensors"));
}

TEST(MtlFolder, TheEngineAndTheCApiLoadTheChosenT3) {
    PipelineModelOptions options{tiny_folder(), BackendOptions{"cpu", 2}, components(Component::t3)};
    options.open.t3_model = "v3";
    const PipelineModel engine(options);
    EXPECT_EQ(engine.files().t3_model(), "v3");
    expect_t3_of_seed(engine.files(), kV3Seed);
    EXPECT_TRUE(test::contains(engine.description(), "multilingual v3 model"));

    chatterbox_engine_params params = chatterbox_engine_default_params();
    params.model_path = tiny_folder().c_str();
    params.backend = "cpu";
    params.threads = 2;
    for (const char *t3_model : {"v3", "v2"}) {
        params.t3_model = t3_model;
        chatterbox_engine *loaded = nullptr;
        ASSERT_EQ(chatterbox_engine_load(&params, &loaded), CHATTERBOX_OK) << chatterbox_last_error();
        EXPECT_TRUE(test::contains(chatterbox_engine_description(loaded), std::string("multilingual ") + t3_model));
        chatterbox_engine_free(loaded);
    }
}

TEST(MtlFolder, ConversionTakesTheChosenT3AndTheGgufSaysWhich) {
    const std::string dir = test::temp_dir("mtl");
    ConvertOptions options;
    options.components = {"t3"};
    options.t3_model = "v3";
    convert_model(tiny_folder(), dir + "/v3.gguf", options);
    const ModelFiles v3 = ModelFiles::open(dir + "/v3.gguf");
    EXPECT_EQ(v3.weights().gguf()->get_string(model_keys::kT3Model), "v3");
    EXPECT_EQ(v3.t3_model(), "v3");
    expect_t3_of_seed(v3, kV3Seed);
    EXPECT_EQ(ModelFiles::open(dir + "/v3.gguf", {"v3"}).t3_model(), "v3");
    expect_error([&] { ModelFiles::open(dir + "/v3.gguf", {"v2"}); },
                 {dir + "/v3.gguf", "asks for t3_mtl23ls_v2.safetensors", "holds v3", "--t3-model v2"});

    options.t3_model.clear();
    convert_model(tiny_folder(), dir + "/default.gguf", options);
    const ModelFiles v2 = ModelFiles::open(dir + "/default.gguf");
    EXPECT_EQ(v2.t3_model(), "v2");
    expect_t3_of_seed(v2, kV2Seed);

    // The tool's option, and its error for a T3 the folder lacks.
    const test::ToolRun run =
        test::run_tool("chatterbox-convert",
                       {tiny_folder(), "-o", dir + "/tool.gguf", "--components", "t3", "--t3-model", "t3_mtl23ls_v3"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    expect_t3_of_seed(ModelFiles::open(dir + "/tool.gguf"), kV3Seed);
    const std::string v2_only = linked_copy(tiny_folder(), dir + "/v2-only", {"t3_mtl23ls_v3.safetensors"});
    const test::ToolRun refused =
        test::run_tool("chatterbox-convert", {v2_only, "-o", dir + "/x.gguf", "--t3-model", "v3"});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_TRUE(test::contains(refused.err, "t3_mtl23ls_v3.safetensors"));
    EXPECT_FALSE(fs::exists(dir + "/x.gguf"));
}

TEST(MtlFolder, PublishedPtStateDictsReadBitEqualToTheirSafetensorsTwins) {
    const ModelFiles twins = ModelFiles::open(tiny_folder());
    const std::string pt_folder =
        linked_copy(tiny_folder(), test::temp_dir("mtl") + "/pt", {"ve.safetensors", "s3gen.safetensors"});
    test::write_torch_state_dict(pt_folder + "/ve.pt", test::state_dict_of(twins.weights(), "ve."));
    test::write_torch_state_dict(pt_folder + "/s3gen.pt", test::state_dict_of(twins.weights(), "s3gen."));

    const ModelFiles pt = ModelFiles::open(pt_folder);
    ASSERT_EQ(pt.weights().size(), twins.weights().size());
    for (const std::string &name : twins.weights().names_with_prefix("")) {
        const TensorView &want = twins.weights().get(name);
        const TensorView *got = pt.weights().find(name);
        ASSERT_NE(got, nullptr) << name;
        ASSERT_EQ(got->type, want.type) << name;
        ASSERT_EQ(got->shape, want.shape) << name;
        ASSERT_EQ(got->nbytes, want.nbytes) << name;
        ASSERT_EQ(std::memcmp(got->data, want.data, want.nbytes), 0) << name;
    }

    // Same weights, same computation: a voice from a recording and the speech made with it are bit-equal.
    const auto speak = [](const std::string &folder) {
        const PipelineModel engine({folder, BackendOptions{"cpu", 2}});
        PipelineSession session(engine);
        const VoiceConditionals voice = session.voice_from_file(test::mtl_golden_path("ref_voice.wav"), 0.5f);
        SynthesisOptions options;
        options.params.sampling.max_new_tokens = 12; // random weights rarely stop on their own
        options.params.sampling.seed = 11;
        options.params.language = "fr";
        return std::make_pair(voice, session.synthesize("Bonjour le monde.", voice, options).wave);
    };
    const auto [want_voice, want_wave] = speak(tiny_folder());
    const auto [got_voice, got_wave] = speak(pt_folder);
    EXPECT_EQ(got_voice.t3.speaker_emb, want_voice.t3.speaker_emb);     // VoiceEncoder (ve.pt)
    EXPECT_EQ(got_voice.t3.prompt_tokens, want_voice.t3.prompt_tokens); // S3Tokenizer (s3gen.pt)
    EXPECT_EQ(got_voice.s3gen.xvector, want_voice.s3gen.xvector);       // CAMPPlus (s3gen.pt)
    EXPECT_EQ(got_voice.s3gen.prompt_mel, want_voice.s3gen.prompt_mel);
    ASSERT_FALSE(want_wave.empty());
    EXPECT_EQ(got_wave, want_wave); // the flow's mel (s3gen.pt) through HiFT
}

} // namespace
} // namespace chatterbox
