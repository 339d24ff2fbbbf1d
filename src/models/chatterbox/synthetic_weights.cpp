#include "models/chatterbox/synthetic_weights.h"

#include "audio/mel.h"
#include "audio/stft.h"
#include "core/error.h"
#include "core/gguf_file.h"
#include "core/safetensors.h"
#include "core/string_match.h"
#include "models/chatterbox/convert.h"
#include "models/chatterbox/model_files.h"
#include "models/chatterbox/variant_spec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

namespace chatterbox::synthetic {

// The texts of src/models/chatterbox/official_manifest.txt and official_manifest_turbo.txt, compiled in by CMake
// (see the top-level CMakeLists.txt).
extern const char *const kOfficialManifestText;
extern const char *const kTurboManifestText;
// tests/data/golden/tokenizer.json (the English tokenizer), compiled in the same way.
extern const char *const kEnglishTokenizerJson;

namespace {

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;
constexpr const char *kNotSaved = "computed_constant_not_saved";

uint64_t splitmix_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Draw i of a tensor's stream, u in [-1, 1): the (i+1)-th SplitMix64 output, computed directly so that any
// index range can be filled independently (and in parallel).
inline double uniform_draw(uint64_t tensor_seed, uint64_t i) {
    const uint64_t z = splitmix_mix(tensor_seed + (i + 1) * kGoldenGamma);
    return double(z >> 40) * 0x1p-24 * 2.0 - 1.0;
}

// How a rule turns u into a value; every form matches WEIGHTS.md operation for operation, in double.
enum class Form {
    Affine,    // offset + scale * u
    AbsAffine, // offset + scale * abs(u)
    Divide,    // u / divisor
};
struct ValueRule {
    Form form;
    double offset = 0, scale = 1, divisor = 1;
};

// Product of all dims except the first (for ConvTranspose1d (in, out, k) that is out * k).
double fan_in(const Shape &shape) {
    double n = 1;
    for (size_t d = 1; d < shape.size(); ++d) n *= double(shape[d]);
    return n;
}

ValueRule value_rule(const std::string &rule, const Shape &shape) {
    if (rule == "running_mean" || rule == "pos_bias") return {Form::Affine, 0.0, 0.1};
    if (rule == "running_var") return {Form::AbsAffine, 1.0, 0.5};
    if (rule == "hift_conv_post_bias") return {Form::Affine, -3.0, 0.02};
    if (rule == "wn_g" || rule == "snake_alpha" || rule == "norm_weight") return {Form::Affine, 1.0, 0.1};
    if (rule == "embedding") return {Form::Affine, 0.0, 1.0};
    if (rule == "fan_in_relu") return {Form::Affine, 0.0, std::sqrt(6.0 / fan_in(shape))};
    if (rule == "fan_in") return {Form::Divide, 0.0, 1.0, std::sqrt(fan_in(shape))};
    // GPT-2's Conv1D stores (in, out): its fan-in is the first dimension.
    if (rule == "fan_in_conv1d") return {Form::Divide, 0.0, 1.0, std::sqrt(double(shape.at(0)))};
    if (rule == "bias") return {Form::Affine, 0.0, 0.02};
    fail("synthetic weights: no value rule '", rule, "'");
}

// One loop per form so the compiler can vectorise each (the draws are independent).
void fill_range(const ValueRule &rule, uint64_t tensor_seed, uint64_t begin, uint64_t end, float *dst) {
    switch (rule.form) {
    case Form::Affine:
        for (uint64_t i = begin; i < end; ++i) dst[i] = float(rule.offset + rule.scale * uniform_draw(tensor_seed, i));
        break;
    case Form::AbsAffine:
        for (uint64_t i = begin; i < end; ++i)
            dst[i] = float(rule.offset + rule.scale * std::fabs(uniform_draw(tensor_seed, i)));
        break;
    case Form::Divide:
        for (uint64_t i = begin; i < end; ++i) dst[i] = float(uniform_draw(tensor_seed, i) / rule.divisor);
        break;
    }
}

// Large tensors are split across the cores; below this many values a thread costs more than it saves.
constexpr uint64_t kValuesPerThread = uint64_t(1) << 18;

void fill_parallel(const ValueRule &rule, uint64_t tensor_seed, uint64_t numel, float *dst) {
    const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
    const uint64_t parts = std::clamp<uint64_t>(numel / kValuesPerThread, 1, cores);
    std::vector<std::thread> helpers;
    for (uint64_t p = 1; p < parts; ++p)
        helpers.emplace_back(fill_range, std::cref(rule), tensor_seed, numel * p / parts, numel * (p + 1) / parts, dst);
    fill_range(rule, tensor_seed, 0, numel / parts, dst);
    for (auto &t : helpers) t.join();
}

ggml_type parse_dtype(const std::string &dtype, size_t line) {
    if (dtype == "float32") return GGML_TYPE_F32;
    if (dtype == "int64") return GGML_TYPE_I64;
    fail("official manifest line ", line, ": unknown dtype '", dtype, "'");
}

Shape parse_shape(const std::string &text, size_t line) {
    if (text.size() < 2 || text.front() != '[' || text.back() != ']')
        fail("official manifest line ", line, ": shape '", text, "' is not [d0,d1,...]");
    Shape shape;
    std::istringstream dims(text.substr(1, text.size() - 2));
    for (std::string dim; std::getline(dims, dim, ',');) {
        size_t used = 0;
        int64_t value = -1;
        try {
            value = std::stoll(dim, &used);
        } catch (const std::exception &) {
        }
        if (value < 0 || used != dim.size()) fail("official manifest line ", line, ": bad dimension in '", text, "'");
        shape.push_back(value);
    }
    return shape;
}

std::vector<ManifestCheckpoint> parse_manifest(const char *text) {
    std::vector<ManifestCheckpoint> checkpoints;
    std::istringstream lines(text);
    size_t line_number = 0;
    for (std::string line; std::getline(lines, line);) {
        ++line_number;
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::string file, name, shape, dtype, rule, extra;
        if (!(fields >> file >> name >> shape >> dtype >> rule) || (fields >> extra))
            fail("official manifest line ", line_number, ": expected 'file name shape dtype rule', got '", line, "'");
        if (checkpoints.empty() || checkpoints.back().file != file) checkpoints.push_back({file, {}});
        checkpoints.back().tensors.push_back(
            {name, parse_shape(shape, line_number), parse_dtype(dtype, line_number), rule, rule != kNotSaved});
    }
    return checkpoints;
}

// What the S3Tokenizer module computes for the buffers Turbo's checkpoint stores: librosa's slaney
// mel filters (16 kHz, n_fft 400, 128 mels) and torch.hann_window(400).
std::vector<float> computed_constant(const std::string &name) {
    if (name == "tokenizer._mel_filters") {
        audio::MelFilterOptions mel;
        mel.sample_rate = 16000;
        mel.n_fft = 400;
        mel.n_mels = 128;
        return audio::librosa_mel_filters(mel).values;
    }
    if (name == "tokenizer.window") return audio::hann_window(400);
    fail("synthetic weights: no computed constant '", name, "'");
}

} // namespace

uint64_t fnv1a64(std::string_view bytes) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char b : bytes) {
        h ^= b;
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t SplitMix64::next() {
    state += kGoldenGamma;
    return splitmix_mix(state);
}

const std::vector<ManifestCheckpoint> &official_manifest(Variant variant) {
    switch (variant) {
    case Variant::english: {
        static const std::vector<ManifestCheckpoint> manifest = parse_manifest(kOfficialManifestText);
        return manifest;
    }
    case Variant::turbo: {
        static const std::vector<ManifestCheckpoint> manifest = parse_manifest(kTurboManifestText);
        return manifest;
    }
    default:
        fail("synthetic weights: no official manifest for the ", variant, " variant (English and Turbo have one)");
    }
}

std::string rule_for(const std::string &name, const Shape &shape) {
    const size_t dot = name.rfind('.');
    const std::string last = dot == std::string::npos ? name : name.substr(dot + 1);
    static const char *const kEmbeddings[] = {"text_emb.weight",
                                              "speech_emb.weight",
                                              "text_pos_emb.emb.weight",
                                              "speech_pos_emb.emb.weight",
                                              "tfmr.embed_tokens.weight",
                                              "cond_enc.perceiver.pre_attention_query",
                                              "flow.input_embedding.weight",
                                              "tfmr.wte.weight",
                                              "tfmr.wpe.weight"};
    static const char *const kConv1dWeights[] = {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight",
                                                 ".mlp.c_proj.weight"};
    if (last == "num_batches_tracked") return "zero_int64";
    if (last == "running_mean") return "running_mean";
    if (last == "running_var") return "running_var";
    if (name == "mel2wav.conv_post.bias") return "hift_conv_post_bias";
    if (ends_with(name, "parametrizations.weight.original0")) return "wn_g";
    if (std::find(std::begin(kEmbeddings), std::end(kEmbeddings), name) != std::end(kEmbeddings)) return "embedding";
    if (last == "pos_bias_u" || last == "pos_bias_v") return "pos_bias";
    if (last == "alpha") return "snake_alpha";
    if (name == "tokenizer._mel_filters" || name == "tokenizer.window") return "computed_constant";
    if (shape.size() >= 2 && starts_with(name, "speaker_encoder.")) return "fan_in_relu";
    if (starts_with(name, "tfmr.h.") && std::any_of(std::begin(kConv1dWeights), std::end(kConv1dWeights),
                                                    [&](const char *suffix) { return ends_with(name, suffix); }))
        return "fan_in_conv1d";
    if (shape.size() >= 2) return "fan_in";
    if (shape.size() == 1 && last == "weight") return "norm_weight";
    return "bias";
}

void fill_tensor(const std::string &name, const Shape &shape, uint64_t seed, void *dst) {
    const uint64_t numel = uint64_t(shape_numel(shape));
    const std::string rule = rule_for(name, shape);
    if (rule == "zero_int64") {
        std::memset(dst, 0, numel * sizeof(int64_t));
        return;
    }
    if (rule == "computed_constant") {
        const std::vector<float> values = computed_constant(name);
        if (values.size() != numel)
            fail("synthetic weights: ", name, " computes ", values.size(), " values, its shape holds ", numel);
        std::memcpy(dst, values.data(), numel * sizeof(float));
        return;
    }
    fill_parallel(value_rule(rule, shape), seed ^ fnv1a64(name), numel, static_cast<float *>(dst));
}

void write_synthetic_model(const std::string &out_dir, uint64_t seed, Variant variant) {
    write_synthetic_folder(out_dir, ModelHparams::for_variant(variant), seed);
}

void write_synthetic_folder(const std::string &out_dir, const ModelHparams &hp, uint64_t seed) {
    const Variant variant = hp.variant;
    std::error_code error;
    std::filesystem::create_directories(out_dir, error);
    if (error) fail("cannot create the folder ", out_dir, ": ", error.message());
    // English and Turbo are their manifests as they are; Nano is Turbo's file set at GPT-2 small's sizes;
    // multilingual English's with its text vocabulary, written as safetensors (ModelFiles reads a .pt
    // checkpoint's safetensors twin), the T3 file of its other folders (v3) hard links to the default's.
    const OfficialFolder &folder = official_folder(variant);
    for (const ManifestCheckpoint &checkpoint : scaled_manifest(hp)) {
        std::vector<SafetensorsEntry> entries;
        for (const ManifestTensor &tensor : checkpoint.tensors) {
            // fill_tensor writes int64 exactly for the zero_int64 rule: the buffer type must agree.
            if ((rule_for(tensor.name, tensor.shape) == "zero_int64") != (tensor.type == GGML_TYPE_I64))
                fail("official manifest: ", checkpoint.file, " tensor '", tensor.name, "' has type ",
                     ggml_type_name(tensor.type), ", which disagrees with its rule ", tensor.rule);
            entries.push_back({tensor.name, tensor.type, tensor.shape,
                               [&tensor, seed](void *dst) { fill_tensor(tensor.name, tensor.shape, seed, dst); }});
        }
        const std::string component = checkpoint_component(checkpoint.file);
        const auto written = [&](const OfficialFolder &f) {
            return std::filesystem::path(out_dir) /
                   std::filesystem::path(f.component_file(component)).replace_extension(".safetensors");
        };
        const std::filesystem::path file = written(folder);
        write_safetensors(file.string(), std::move(entries));
        for (const OfficialFolder &other : official_folders()) {
            const std::filesystem::path twin = written(other);
            if (other.variant != variant || twin == file) continue;
            std::filesystem::remove(twin, error);
            std::filesystem::create_hard_link(file, twin, error);
            if (error) fail("cannot link ", twin.string(), " to ", file.string(), ": ", error.message());
        }
    }
}

namespace {

// A width of the official model and the one hp gives it, replaced in the shapes of one checkpoint's
// tensors whose names start with name_prefix. Only widths no other size of that checkpoint shares
// are listed, so that every replacement is unambiguous.
// The rules name a component ("t3", "s3gen"): they hold for each variant's file of it.
struct WidthRule {
    const char *component;
    const char *name_prefix;
    int64_t official, scaled;
};

// Numbered blocks of one checkpoint (the regex captures the block number) and how many hp keeps.
struct BlockRule {
    const char *component;
    std::regex numbered;
    int64_t official, scaled;
};

std::vector<WidthRule> width_rules(const ModelHparams &official, const ModelHparams &hp) {
    std::vector<WidthRule> rules = {
        // GPT-2 (tfmr.h.*): the fused c_attn's 3 x hidden first; then hidden and ffn (Llama and GPT-2).
        {"t3", "tfmr.h.", 3 * official.t3.hidden, 3 * hp.t3.hidden},
        {"t3", "", official.t3.hidden, hp.t3.hidden},
        {"t3", "", official.t3.ffn, hp.t3.ffn},
        {"t3", "text_", official.t3.text_vocab, hp.t3.text_vocab}, // multilingual's 2454 rows of English's 704
        {"s3gen", "mel2wav.", official.hift.base_channels, hp.hift.base_channels},
        {"s3gen", "tokenizer.", official.s3tokenizer.state, hp.s3tokenizer.state},
        {"s3gen", "tokenizer.", 4 * official.s3tokenizer.state, 4 * hp.s3tokenizer.state}, // MLP
    };
    for (int stage = 0; stage < int(official.hift.upsample_rates.size()); ++stage)
        rules.push_back({"s3gen", "mel2wav.", official.hift.channels(stage), hp.hift.channels(stage)});
    return rules;
}

std::vector<BlockRule> block_rules(const ModelHparams &official, const ModelHparams &hp) {
    const s3gen::FlowHParams &of = official.flow, &f = hp.flow;
    return {
        {"t3", std::regex(R"(^tfmr\.(?:layers|h)\.(\d+)\.)"), official.t3.n_layers, hp.t3.n_layers},
        {"s3gen", std::regex(R"(^tokenizer\.encoder\.blocks\.(\d+)\.)"), official.s3tokenizer.layers,
         hp.s3tokenizer.layers},
        {"s3gen", std::regex(R"(^flow\.encoder\.encoders\.(\d+)\.)"), of.encoder_blocks, f.encoder_blocks},
        {"s3gen", std::regex(R"(^flow\.encoder\.up_encoders\.(\d+)\.)"), of.encoder_up_blocks, f.encoder_up_blocks},
        {"s3gen", std::regex(R"(^flow\.decoder\.estimator\.mid_blocks\.(\d+)\.)"), of.decoder_mid_blocks,
         f.decoder_mid_blocks},
        {"s3gen", std::regex(R"(^flow\.decoder\.estimator\.\w+_blocks\.\d+\.1\.(\d+)\.)"),
         of.decoder_transformer_blocks, f.decoder_transformer_blocks},
    };
}

bool kept(const std::string &component, const std::string &name, const std::vector<BlockRule> &rules) {
    for (const BlockRule &rule : rules) {
        std::smatch block;
        if (rule.component == component && std::regex_search(name, block, rule.numbered) &&
            std::stoll(block[1]) >= rule.scaled)
            return false;
    }
    return true;
}

Shape scaled_shape(const std::string &component, const std::string &name, Shape shape,
                   const std::vector<WidthRule> &rules) {
    for (int64_t &dim : shape)
        for (const WidthRule &rule : rules)
            if (rule.component == component && starts_with(name, rule.name_prefix) && dim == rule.official) {
                dim = rule.scaled;
                break; // each dimension is replaced once
            }
    return shape;
}

// Prompt of the tiny model's built-in voice: 2 s of speech tokens (25 Hz) for S3Gen.
constexpr int64_t kTinyVoicePromptTokens = 50;
constexpr float kTinyVoiceExaggeration = 0.5f; // the official default

// Token ids in [0, vocab) drawn from the seed and the tensor's name.
std::vector<int64_t> voice_tokens(const std::string &name, uint64_t seed, int64_t count, int64_t vocab) {
    SplitMix64 rng{seed ^ fnv1a64(name)};
    std::vector<int64_t> ids(static_cast<size_t>(count));
    for (int64_t &id : ids) id = int64_t(rng.next() % uint64_t(vocab));
    return ids;
}

} // namespace

ModelHparams tiny_hparams(Variant variant) {
    ModelHparams hp = ModelHparams::for_variant(variant);
    hp.t3.n_layers = 2;
    hp.t3.hidden = 128;
    hp.t3.n_heads = 4;
    hp.t3.head_dim = 32;
    hp.t3.ffn = 256;
    hp.flow.encoder_blocks = 1;
    hp.flow.encoder_up_blocks = 1;
    hp.flow.decoder_mid_blocks = 1;
    hp.flow.decoder_transformer_blocks = 1;
    hp.flow.cfm_steps = 2; // the mean flow's own count
    hp.hift.base_channels = 64;
    hp.s3tokenizer.state = 128;
    hp.s3tokenizer.heads = 2;
    hp.s3tokenizer.layers = 1;
    return hp;
}

std::vector<ManifestCheckpoint> scaled_manifest(const ModelHparams &hp) {
    // A GPT-2 T3 (Turbo, Nano) scales Turbo's file set; S3Gen keeps English's rules (its Turbo
    // file, s3gen_meanflow, is not scaled).
    const bool gpt2 = hp.t3.backbone_kind() == t3::Backbone::gpt2;
    const Variant manifest_variant = gpt2 ? Variant::turbo : Variant::english;
    ModelHparams official = ModelHparams::for_variant(Variant::english);
    official.t3 = variant_spec(manifest_variant).t3;
    const std::vector<WidthRule> widths = width_rules(official, hp);
    const std::vector<BlockRule> blocks = block_rules(official, hp);
    for (const BlockRule &rule : blocks)
        if (rule.scaled > rule.official)
            fail("synthetic weights: ", rule.scaled, " blocks asked where the official model has ", rule.official);
    std::vector<ManifestCheckpoint> scaled;
    for (const ManifestCheckpoint &checkpoint : official_manifest(manifest_variant)) {
        scaled.push_back({checkpoint.file, {}});
        const std::string component = checkpoint_component(checkpoint.file); // the rules' key
        for (const ManifestTensor &tensor : checkpoint.tensors) {
            if (!tensor.stored || !kept(component, tensor.name, blocks)) continue;
            ManifestTensor t = tensor;
            t.shape = scaled_shape(component, tensor.name, tensor.shape, widths);
            scaled.back().tensors.push_back(std::move(t));
        }
    }
    return scaled;
}

void write_tiny_model(const std::string &out_dir, uint64_t seed, Variant variant, const std::string &tokenizer_json,
                      const std::string &cangjie_json) {
    std::error_code error;
    std::filesystem::create_directories(out_dir, error);
    if (error) fail("cannot create the folder ", out_dir, ": ", error.message());
    const ModelHparams hp = tiny_hparams(variant);
    hp.validate();
    if (tokenizer_json.empty() && variant != Variant::english)
        fail("the tiny ", variant, " model needs its tokenizer (only English's is built in)");

    GgufWriter writer;
    std::vector<std::string> components;
    for (const ModelComponent &c : model_components()) components.push_back(c.name);
    const std::string tokenizer = tokenizer_json.empty() ? std::string(kEnglishTokenizerJson) : tokenizer_json;
    write_model_metadata(writer, hp, components, GGML_TYPE_F32, &tokenizer);
    if (!cangjie_json.empty()) writer.set_string(model_keys::kCangjieJson, cangjie_json);

    const std::vector<ManifestCheckpoint> checkpoints = scaled_manifest(hp);
    for (const ManifestCheckpoint &checkpoint : checkpoints) {
        const std::string prefix = checkpoint_component(checkpoint.file) + ".";
        for (const ManifestTensor &t : checkpoint.tensors)
            writer.add_tensor(prefix + t.name, t.type, t.shape,
                              [&t, seed](void *dst) { fill_tensor(t.name, t.shape, seed, dst); });
    }

    // The built-in voice, in builtin_voice_tensor_names() order.
    const std::vector<std::string> &voice = builtin_voice_tensor_names();
    const auto add_f32 = [&](const std::string &name, const Shape &shape) {
        writer.add_tensor(name, GGML_TYPE_F32, shape,
                          [name, shape, seed](void *dst) { fill_tensor(name, shape, seed, dst); });
    };
    const auto add_tokens = [&](const std::string &name, int64_t count, int64_t vocab) {
        writer.add_tensor(name, GGML_TYPE_I64, {1, count}, [name, count, vocab, seed](void *dst) {
            const std::vector<int64_t> ids = voice_tokens(name, seed, count, vocab);
            std::memcpy(dst, ids.data(), ids.size() * sizeof(int64_t));
        });
    };
    add_f32(voice[0], {1, hp.t3.speaker_embed});
    add_tokens(voice[1], hp.t3.speech_cond_prompt_len, hp.t3.speech_token_limit);
    writer.add_tensor(voice[2], GGML_TYPE_F32, {1, 1, 1},
                      [](void *dst) { std::memcpy(dst, &kTinyVoiceExaggeration, sizeof(float)); });
    add_tokens(voice[3], kTinyVoicePromptTokens, hp.flow.vocab);
    add_f32(voice[4], {1, kTinyVoicePromptTokens * hp.flow.token_mel_ratio, hp.flow.mel_bins});
    add_f32(voice[5], {1, hp.flow.speaker_dim});
    writer.write((std::filesystem::path(out_dir) / "model.gguf").string());
}

} // namespace chatterbox::synthetic
