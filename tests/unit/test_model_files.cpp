// ModelFiles (official folder or GGUF), the hyper-parameter metadata, the converter's precision
// rule and errors, and binding a folder's weights (missing / mis-shaped tensors), on a tiny model
// with official-style names.

#include "core/backend.h"
#include "core/error.h"
#include "modules/module_weights.h"
#include "core/safetensors.h"
#include "models/chatterbox/convert.h"
#include "models/chatterbox/model_files.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace chatterbox {
namespace {

namespace fs = std::filesystem;

template <class Body> void expect_error(Body &&body, const std::vector<std::string> &parts) {
    try {
        body();
        ADD_FAILURE() << "no error thrown; expected one mentioning " << parts.front();
    } catch (const Error &e) {
        for (const auto &part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

struct TinyTensor {
    std::string name; // without the component prefix
    ggml_type type;
    Shape shape;
    ggml_type expect_q8; // stored type when converting with --type q8_0
    ggml_type expect_q4; // ... with --type q4_k
};

constexpr ggml_type F32 = GGML_TYPE_F32, F16 = GGML_TYPE_F16, BF16 = GGML_TYPE_BF16, I64 = GGML_TYPE_I64,
                    Q8 = GGML_TYPE_Q8_0, Q4 = GGML_TYPE_Q4_K;

const std::vector<std::pair<std::string, std::vector<TinyTensor>>> &tiny_model() {
    static const std::vector<std::pair<std::string, std::vector<TinyTensor>>> model = {
        {"ve.safetensors",
         {
             {"lstm.weight_ih_l0", F32, {1024, 40}, F32, F32}, // LSTM gates: not a `weight`
             {"proj.weight", F32, {256, 256}, Q8, Q4},
             {"proj.bias", F32, {256}, F32, F32},
         }},
        {"t3_cfg.safetensors",
         {
             {"tfmr.layers.0.mlp.up_proj.weight", F32, {128, 64}, Q8, Q8}, // 64 is no whole q4_k block
             {"tfmr.layers.0.self_attn.q_proj.weight", F16, {64, 64}, Q8, Q8},
             {"tfmr.layers.0.input_layernorm.weight", F32, {64}, F32, F32},
             {"cond_enc.spkr_enc.weight", BF16, {64, 256}, Q8, Q4},
             {"cond_enc.emotion_adv_fc.weight", F32, {64, 1}, F32, F32}, // < 4096 elements
             {"cond_enc.perceiver.pre_attention_query", F32, {1, 32, 64}, F32, F32},
             {"text_emb.weight", F32, {704, 64}, F32, F32},
             {"speech_pos_emb.emb.weight", F32, {100, 64}, F32, F32},
             {"speech_head.weight", F32, {64, 256}, Q8, Q4},
         }},
        {"s3gen.safetensors",
         {
             {"mel2wav.conv_pre.parametrizations.weight.original1", F32, {64, 80, 7}, F16, F16}, // kernel 7
             {"mel2wav.conv_pre.parametrizations.weight.original0", F32, {64, 1, 1}, F32, F32},
             {"flow.input_embedding.weight", F32, {6561, 64}, F32, F32},
             {"flow.encoder.encoders.0.self_attn.pos_bias_u", F32, {8, 64}, F32, F32},
             {"flow.encoder.encoders.0.norm_mha.weight", F32, {512}, F32, F32},
             {"flow.decoder.estimator.transformer_blocks.0.attn1.to_out.0.weight", F32, {64, 512}, Q8, Q4},
             {"speaker_encoder.xvector.block1.tdnnd1.nonlinear1.batchnorm.num_batches_tracked", I64, {}, I64, I64},
         }},
    };
    return model;
}

std::string prefix_of(const std::string &file) { return file.substr(0, file.find_first_of("_.")) + "."; }

// Values of every tiny tensor, reproducible from its name.
std::vector<float> tiny_values(const std::string &name, const Shape &shape) {
    return test::random_values(size_t(shape_numel(shape)), std::hash<std::string>{}(name));
}

void write_tiny_folder(const std::string &dir, bool tokenizer, bool conds) {
    for (const auto &[file, tensors] : tiny_model()) {
        std::vector<SafetensorsEntry> entries;
        for (const auto &t : tensors)
            entries.push_back({t.name, t.type, t.shape, [t](void *dst) {
                                   const auto values = tiny_values(t.name, t.shape);
                                   if (t.type == I64)
                                       std::memset(dst, 0, 8);
                                   else
                                       ggml_quantize_chunk(t.type, values.data(), dst, 0, 1, int64_t(values.size()),
                                                           nullptr);
                               }});
        write_safetensors(dir + "/" + file, entries);
    }
    if (tokenizer) fs::copy_file(test::golden_path("tokenizer.json"), dir + "/tokenizer.json");
    if (conds) fs::copy_file(test::data_path("pt/conds.pt"), dir + "/conds.pt");
}

std::string read_text(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

double relative_rms_error(const std::vector<float> &got, const std::vector<float> &want) {
    double err = 0, ref = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        ref += double(want[i]) * want[i];
    }
    return std::sqrt(err / ref);
}

TEST(ModelFiles, OpensTheOfficialFolderLayout) {
    const std::string dir = test::temp_dir("model");
    write_tiny_folder(dir, true, true);
    const ModelFiles files = ModelFiles::open(dir);

    EXPECT_FALSE(files.is_gguf());
    EXPECT_EQ(files.components(), (std::vector<std::string>{"ve", "t3", "s3gen"}));
    // The English defaults, with the sizes the tensors present declare.
    const ModelHparams &hp = files.hparams();
    EXPECT_EQ(hp.variant, Variant::english);
    EXPECT_EQ(hp.t3.n_layers, 1);
    EXPECT_EQ(hp.t3.hidden, 64);
    EXPECT_EQ(hp.t3.head_dim, 4);
    EXPECT_EQ(hp.t3.text_vocab, 704);
    EXPECT_EQ(hp.t3.speech_positions, 100);
    EXPECT_EQ(hp.t3.rope_theta, t3::HParams::english().rope_theta);
    EXPECT_EQ(hp.flow.encoder_dim, 64);
    EXPECT_EQ(hp.flow.encoder_blocks, 1);
    EXPECT_EQ(hp.flow.decoder_mid_blocks, s3gen::FlowHParams::standard().decoder_mid_blocks); // none present
    EXPECT_EQ(hp.hift.base_channels, 64);
    EXPECT_EQ(hp.hift.upsample_rates, (std::array<int, 3>{8, 5, 3}));
    EXPECT_EQ(files.tokenizer_json(), read_text(test::golden_path("tokenizer.json")));

    const WeightStore &store = files.weights();
    EXPECT_EQ(store.get("t3.text_emb.weight").shape, (Shape{704, 64}));
    EXPECT_EQ(store.get("ve.proj.bias").shape, (Shape{256}));
    EXPECT_EQ(store.get("t3.tfmr.layers.0.self_attn.q_proj.weight").type, GGML_TYPE_F16);
    EXPECT_EQ(store.names_with_prefix("s3gen.").size(), tiny_model()[2].second.size());

    // The conds.pt fixture (tests/data/pt/make_pt_fixtures.py): Np = 12 prompt tokens.
    ASSERT_TRUE(files.builtin_voice().has_value());
    const BuiltinVoice &voice = *files.builtin_voice();
    EXPECT_EQ(voice.speaker_emb.shape, (Shape{1, 256}));
    EXPECT_EQ(voice.speaker_emb.data_as<float>()[0], -2.0f);
    EXPECT_EQ(voice.cond_prompt_speech_tokens.shape, (Shape{1, 150}));
    EXPECT_EQ(voice.cond_prompt_speech_tokens.data_as<int64_t>()[149], (149 * 37) % 6561);
    EXPECT_EQ(voice.emotion_adv.shape, (Shape{1, 1, 1}));
    EXPECT_EQ(voice.emotion_adv.data_as<float>()[0], 0.5f);
    EXPECT_EQ(voice.prompt_token.shape, (Shape{1, 12}));
    EXPECT_EQ(voice.prompt_token.data_as<int64_t>()[11], (11 * 101) % 6561);
    EXPECT_EQ(voice.prompt_feat.shape, (Shape{1, 24, 80}));
    EXPECT_EQ(voice.embedding.shape, (Shape{1, 192}));
    for (const std::string &name : builtin_voice_tensor_names()) EXPECT_NE(store.find(name), nullptr) << name;
}

TEST(ModelFiles, MissingPiecesGiveClearErrors) {
    const std::string dir = test::temp_dir("model");
    write_tiny_folder(dir, false, false);
    const ModelFiles bare = ModelFiles::open(dir);
    EXPECT_FALSE(bare.has_tokenizer());
    EXPECT_FALSE(bare.builtin_voice().has_value());
    expect_error([&] { bare.tokenizer_json(); }, {dir, "no tokenizer"});

    fs::remove(dir + "/t3_cfg.safetensors");
    expect_error([&] { ModelFiles::open(dir); },
                 {dir, "no T3 checkpoint", "t3_cfg.safetensors (english)", "t3_turbo_v1.safetensors (turbo)",
                  "expected an official Chatterbox folder", "chatterbox-convert"});
    write_tiny_folder(dir, false, false);
    fs::remove(dir + "/s3gen.safetensors");
    expect_error([&] { ModelFiles::open(dir); }, {dir, "no s3gen.safetensors", "english", "ResembleAI/chatterbox"});
    expect_error([&] { ModelFiles::open(dir + "/absent"); }, {dir + "/absent", "no such file or folder"});
    expect_error([&] { ModelFiles::open(dir + "/ve.safetensors"); }, {dir + "/ve.safetensors", "bad magic"});
}

// Field i of a component struct changed: integers +1, floats doubled (or 1 from 0), arrays element-wise +1.
template <class H> H with_changed_field(H h, const HparamField<H> &field) {
    std::visit(
        [&](auto member) {
            auto &value = h.*member;
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_integral_v<T>)
                value = T(value + 1);
            else if constexpr (std::is_floating_point_v<T>)
                value = value == 0 ? T(1) : T(value * 2);
            else
                for (auto &x : value) ++x;
        },
        field.member);
    return h;
}

template <class H> bool same_field(const H &a, const H &b, const HparamField<H> &field) {
    return std::visit([&](auto member) { return a.*member == b.*member; }, field.member);
}

// The component struct of type H in h (each component has its own type).
template <class H, class Hparams> auto &component_of(Hparams &h) {
    std::conditional_t<std::is_const_v<Hparams>, const H, H> *found = nullptr;
    visit_component_hparams(h, [&](const auto &, auto &c) {
        if constexpr (std::is_same_v<std::decay_t<decltype(c)>, H>) found = &c;
    });
    return *found;
}

std::string write_metadata_gguf(const std::string &path, const ModelHparams &h) {
    GgufWriter writer;
    h.write_metadata(writer);
    writer.write(path);
    return path;
}

TEST(ModelHparams, EveryKeyRoundTripsAndNothingElseIsWritten) {
    const std::string dir = test::temp_dir("hparams");
    for (const Variant variant : {Variant::english, Variant::multilingual, Variant::turbo, Variant::nano}) {
        const ModelHparams h = ModelHparams::for_variant(variant);
        const GgufFile file(write_metadata_gguf(dir + "/hparams.gguf", h));
        const ModelHparams got = ModelHparams::from_metadata(file);
        EXPECT_EQ(got.variant, variant);
        EXPECT_EQ(got.t3.is_multilingual(), variant == Variant::multilingual);
        // Besides the tables: the variant and the writer's own tensor-name records.
        std::vector<std::string> keys = {model_keys::kVariant, "chatterbox.tensor_names", "chatterbox.tensor_ranks"};
        visit_component_hparams(got, [&](const auto &table, const auto &component) {
            const auto &want = component_of<std::decay_t<decltype(component)>>(h);
            for (const auto &field : table) {
                keys.push_back(field.key);
                EXPECT_TRUE(same_field(component, want, field)) << field.key;
            }
        });
        std::vector<std::string> written = file.keys();
        std::sort(keys.begin(), keys.end());
        std::sort(written.begin(), written.end());
        EXPECT_EQ(written, keys);
    }
}

TEST(ModelHparams, ChangingAnyKeyChangesTheComponentOrIsRefusedByName) {
    const std::string path = test::temp_dir("hparams") + "/changed.gguf";
    const ModelHparams english = ModelHparams::for_variant(Variant::english);
    size_t changed = 0, refused = 0;
    visit_component_hparams(english, [&](const auto &table, const auto &component) {
        using H = std::decay_t<decltype(component)>;
        for (const HparamField<H> &field : table) {
            ModelHparams h = english;
            component_of<H>(h) = with_changed_field(component, field);
            write_metadata_gguf(path, h);
            try {
                const ModelHparams got = ModelHparams::from_metadata(GgufFile(path));
                EXPECT_TRUE(same_field(component_of<H>(got), component_of<H>(h), field)) << field.key;
                EXPECT_FALSE(same_field(component_of<H>(got), component, field)) << field.key;
                ++changed;
            } catch (const Error &e) {
                EXPECT_TRUE(test::contains(e.what(), field.key)) << field.key;
                EXPECT_TRUE(test::contains(e.what(), path));
                ++refused;
            }
        }
    });
    EXPECT_GT(changed, 40u);
    EXPECT_GT(refused, 20u); // the fixed sizes of the voice models, the rules between fields
}

TEST(ModelHparams, MissingKeysAndUnknownVariantsAreErrors) {
    const std::string path = test::temp_dir("hparams") + "/hparams.gguf";
    GgufWriter partial;
    partial.set_string(model_keys::kVariant, "english");
    partial.write(path);
    expect_error([&] { ModelHparams::from_metadata(GgufFile(path)); },
                 {path, "no metadata key chatterbox.t3.", "convert the model again"});

    GgufWriter writer;
    writer.set_string(model_keys::kVariant, "bogus");
    writer.write(path);
    expect_error([&] { ModelHparams::from_metadata(GgufFile(path)); },
                 {path, model_keys::kVariant, "bogus", "known: english, multilingual, turbo, nano"});
}

TEST(Convert, F32RoundTripKeepsEveryTensorAndPiece) {
    const std::string dir = test::temp_dir("convert");
    write_tiny_folder(dir, true, true);
    const std::string gguf = dir + "/model.gguf";
    size_t calls = 0;
    ConvertOptions options;
    options.progress = [&](size_t index, size_t count, const std::string &) {
        EXPECT_EQ(index, calls++);
        EXPECT_EQ(count, 3u + 9u + 7u + 6u);
    };
    const ConvertSummary summary = convert_model(dir, gguf, options);
    EXPECT_EQ(calls, 25u);
    EXPECT_EQ(summary.by_type.at(GGML_TYPE_F32).tensors, 22u);
    EXPECT_EQ(summary.by_type.at(GGML_TYPE_I64).tensors, 3u); // num_batches_tracked and two token lists

    const ModelFiles folder = ModelFiles::open(dir);
    const ModelFiles file = ModelFiles::open(gguf);
    EXPECT_TRUE(file.is_gguf());
    EXPECT_EQ(file.components(), folder.components());
    EXPECT_EQ(file.tokenizer_json(), folder.tokenizer_json());
    EXPECT_EQ(file.hparams().variant, Variant::english);
    EXPECT_EQ(file.hparams().t3.hidden, folder.hparams().t3.hidden);
    EXPECT_EQ(file.hparams().t3.rope_original_max_positions, 8192);
    EXPECT_EQ(file.weights().size(), folder.weights().size());
    for (const std::string &name : folder.weights().names_with_prefix("")) {
        const TensorView &want = folder.weights().get(name);
        const TensorView *got = file.weights().find(name);
        ASSERT_NE(got, nullptr) << name;
        EXPECT_EQ(got->shape, want.shape) << name;
        if (want.type == I64) {
            EXPECT_EQ(got->type, I64);
            EXPECT_EQ(to_i64(*got), to_i64(want)) << name;
        } else {
            EXPECT_EQ(got->type, F32) << name;
            EXPECT_EQ(to_f32(*got), to_f32(want)) << name; // f16/bf16 sources widen exactly
        }
    }
    ASSERT_TRUE(file.builtin_voice().has_value());
    EXPECT_EQ(file.builtin_voice()->prompt_feat.bytes, folder.builtin_voice()->prompt_feat.bytes);
    EXPECT_EQ(file.builtin_voice()->cond_prompt_speech_tokens.bytes,
              folder.builtin_voice()->cond_prompt_speech_tokens.bytes);
}

TEST(Convert, PrecisionRuleAndFallbacks) {
    const std::string dir = test::temp_dir("convert");
    write_tiny_folder(dir, true, false);
    for (ggml_type requested : {Q8, Q4}) {
        const std::string gguf = dir + "/" + matrix_type_name(requested) + ".gguf";
        ConvertOptions options;
        options.matrix_type = requested;
        const ConvertSummary summary = convert_model(dir, gguf, options);
        EXPECT_EQ(summary.fallbacks, requested == Q8 ? 1u : 3u);
        EXPECT_NE(summary.text().find(ggml_type_name(requested)), std::string::npos) << summary.text();

        const ModelFiles folder = ModelFiles::open(dir);
        const ModelFiles file = ModelFiles::open(gguf);
        EXPECT_EQ(file.weights().gguf()->get_string("chatterbox.matrix_type"), matrix_type_name(requested));
        for (const auto &[source, tensors] : tiny_model()) {
            for (const TinyTensor &t : tensors) {
                const std::string name = prefix_of(source) + t.name;
                const TensorView &got = file.weights().get(name);
                EXPECT_EQ(got.type, requested == Q8 ? t.expect_q8 : t.expect_q4)
                    << name << " is " << ggml_type_name(got.type);
                EXPECT_EQ(got.shape, t.shape) << name;
                if (t.type == I64) continue;
                const double err = relative_rms_error(to_f32(got), to_f32(folder.weights().get(name)));
                // uniform test values: q4_k's error is about 5.5 % of their RMS (see test_convert.cpp)
                EXPECT_LT(err, got.type == Q4 ? 0.06 : got.type == Q8 ? 0.01 : 1e-3) << name;
            }
        }
    }
}

TEST(Convert, RefusesBadRequests) {
    const std::string dir = test::temp_dir("convert");
    write_tiny_folder(dir, false, false);
    const std::string out = dir + "/out.gguf";
    expect_error([&] { convert_model(dir, out, {}); }, {dir, "no tokenizer.json", "t3"});
    EXPECT_FALSE(fs::exists(out));

    ConvertOptions vocoder_only;
    vocoder_only.components = {"ve", "s3gen"};
    convert_model(dir, out, vocoder_only);
    const ModelFiles partial = ModelFiles::open(out);
    EXPECT_EQ(partial.components(), (std::vector<std::string>{"ve", "s3gen"}));
    EXPECT_TRUE(partial.weights().names_with_prefix("t3.").empty());
    EXPECT_TRUE(partial.has_component("s3gen"));
    EXPECT_FALSE(partial.has_component("t3"));

    ConvertOptions unknown;
    unknown.components = {"vocoder"};
    expect_error([&] { convert_model(dir, dir + "/x.gguf", unknown); }, {"unknown component \"vocoder\""});
    ConvertOptions absent;
    absent.components = {"t3"};
    expect_error([&] { convert_model(out, dir + "/x.gguf", absent); }, {out, "no component t3"});
    expect_error([&] { convert_model(out, out, vocoder_only); }, {out, "is the input model"});
    expect_error([&] { parse_matrix_type("q5_1"); }, {"q5_1", "f32, f16, q8_0 or q4_k"});
    EXPECT_EQ(parse_matrix_type("Q4_K"), GGML_TYPE_Q4_K);
}

// Writes a GGUF with English metadata, no components and the given voice tensors.
void write_voice_gguf(const std::string &path, const std::vector<HostTensor> &voice) {
    GgufWriter writer;
    ModelHparams::for_variant(Variant::english).write_metadata(writer);
    writer.set_string_array(model_keys::kComponents, {});
    for (const HostTensor &t : voice)
        writer.add_tensor(t.name, t.type, t.shape,
                          [&t](void *dst) { std::memcpy(dst, t.bytes.data(), t.bytes.size()); });
    writer.write(path);
}

TEST(ModelFiles, ValidatesTheBuiltinVoice) {
    const std::string dir = test::temp_dir("model");
    const std::string path = dir + "/voice.gguf";
    auto voice = [] {
        std::vector<HostTensor> v = {
            HostTensor("conds.t3.speaker_emb", F32, {1, 256}),
            HostTensor("conds.t3.cond_prompt_speech_tokens", I64, {1, 5}),
            HostTensor("conds.t3.emotion_adv", F32, {1, 1, 1}),
            HostTensor("conds.gen.prompt_token", I64, {1, 3}),
            HostTensor("conds.gen.prompt_feat", F32, {1, 6, 80}),
            HostTensor("conds.gen.embedding", F32, {1, 192}),
        };
        return v;
    };
    write_voice_gguf(path, voice());
    EXPECT_TRUE(ModelFiles::open(path).builtin_voice().has_value());

    auto bad_token = voice();
    bad_token[3].data_as<int64_t>()[2] = 6561;
    write_voice_gguf(path, bad_token);
    expect_error([&] { ModelFiles::open(path); }, {path, "conds.gen.prompt_token", "6561", "outside the vocabulary"});

    auto bad_shape = voice();
    bad_shape[0] = HostTensor("conds.t3.speaker_emb", F32, {1, 255});
    write_voice_gguf(path, bad_shape);
    expect_error([&] { ModelFiles::open(path); }, {path, "conds.t3.speaker_emb", "[1, 255]", "expected f32 [1, 256]"});

    auto incomplete = voice();
    incomplete.pop_back();
    write_voice_gguf(path, incomplete);
    expect_error([&] { ModelFiles::open(path); }, {path, "built-in voice is incomplete", "conds.gen.embedding"});

    GgufWriter other;
    other.set_string("general.architecture", "llama");
    other.write(path);
    expect_error([&] { ModelFiles::open(path); }, {path, "not a Chatterbox model"});
}

TEST(ModelFiles, BindingReportsMissingAndMisShapedTensors) {
    const std::string dir = test::temp_dir("model");
    write_tiny_folder(dir, true, false);
    const ModelFiles files = ModelFiles::open(dir);
    Backend backend;

    ModuleWeights good(files.weights(), "t3.", backend);
    good.get("tfmr.layers.0.mlp.up_proj.weight", {128, 64}, WeightUse::matmul);
    good.get("text_emb.weight", {704, 64}, WeightUse::as_stored);
    good.ignore("tfmr.layers.0.self_attn.");
    good.ignore("tfmr.layers.0.input_layernorm.");
    good.ignore("cond_enc.");
    good.ignore("speech_");
    good.load();
    EXPECT_GT(good.bytes(), 0u);

    ModuleWeights bad(files.weights(), "t3.", backend);
    bad.get("tfmr.layers.0.mlp.up_proj.weight", {128, 64}, WeightUse::matmul);
    bad.get("tfmr.layers.1.mlp.up_proj.weight", {128, 64}, WeightUse::matmul);
    bad.get("text_emb.weight", {704, 16}, WeightUse::as_stored);
    bad.ignore("tfmr.layers.0.self_attn.");
    bad.ignore("tfmr.layers.0.input_layernorm.");
    bad.ignore("cond_enc.");
    bad.ignore("speech_");
    expect_error([&] { bad.load(); }, {"2 problems", "t3.tfmr.layers.1.mlp.up_proj.weight: missing",
                                       "t3.text_emb.weight: expected [704, 16], file has [704, 64]"});
}

} // namespace
} // namespace chatterbox
