#include "models/chatterbox/model_files.h"

#include "core/error.h"
#include "core/torch_pickle.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

namespace chatterbox {

namespace fs = std::filesystem;

namespace {

using model_keys::kComponents;
using model_keys::kTokenizerJson;
using model_keys::kVariant;

// Every hyper-parameter with its metadata key, so writing and reading cannot drift apart.
template <class Hparams, class Visit> void visit_fields(Hparams &h, Visit &&visit) {
    visit("chatterbox.t3.n_layers", h.t3.n_layers);
    visit("chatterbox.t3.hidden", h.t3.hidden);
    visit("chatterbox.t3.n_heads", h.t3.n_heads);
    visit("chatterbox.t3.n_kv_heads", h.t3.n_kv_heads);
    visit("chatterbox.t3.head_dim", h.t3.head_dim);
    visit("chatterbox.t3.intermediate", h.t3.intermediate);
    visit("chatterbox.t3.rms_eps", h.t3.rms_eps);
    visit("chatterbox.t3.rope.theta", h.t3.rope_theta);
    visit("chatterbox.t3.rope.factor", h.t3.rope_factor);
    visit("chatterbox.t3.rope.low_freq_factor", h.t3.rope_low_freq_factor);
    visit("chatterbox.t3.rope.high_freq_factor", h.t3.rope_high_freq_factor);
    visit("chatterbox.t3.rope.original_max_positions", h.t3.rope_original_max_positions);
    visit("chatterbox.t3.text_vocab", h.t3.text_vocab);
    visit("chatterbox.t3.speech_vocab", h.t3.speech_vocab);
    visit("chatterbox.t3.start_text_token", h.t3.start_text_token);
    visit("chatterbox.t3.stop_text_token", h.t3.stop_text_token);
    visit("chatterbox.t3.start_speech_token", h.t3.start_speech_token);
    visit("chatterbox.t3.stop_speech_token", h.t3.stop_speech_token);
    visit("chatterbox.t3.max_text_tokens", h.t3.max_text_tokens);
    visit("chatterbox.t3.max_speech_tokens", h.t3.max_speech_tokens);
    visit("chatterbox.t3.speaker_emb", h.t3.speaker_emb);
    visit("chatterbox.t3.perceiver_queries", h.t3.perceiver_queries);
    visit("chatterbox.t3.speech_cond_prompt_len", h.t3.speech_cond_prompt_len);

    visit("chatterbox.ve.n_mels", h.ve.n_mels);
    visit("chatterbox.ve.hidden", h.ve.hidden);
    visit("chatterbox.ve.n_layers", h.ve.n_layers);
    visit("chatterbox.ve.embedding", h.ve.embedding);
    visit("chatterbox.ve.partial_frames", h.ve.partial_frames);
    visit("chatterbox.ve.sample_rate", h.ve.sample_rate);

    visit("chatterbox.s3gen.token_vocab", h.s3gen.token_vocab);
    visit("chatterbox.s3gen.encoder_dim", h.s3gen.encoder_dim);
    visit("chatterbox.s3gen.encoder_heads", h.s3gen.encoder_heads);
    visit("chatterbox.s3gen.encoder_ffn", h.s3gen.encoder_ffn);
    visit("chatterbox.s3gen.encoder_blocks", h.s3gen.encoder_blocks);
    visit("chatterbox.s3gen.encoder_up_blocks", h.s3gen.encoder_up_blocks);
    visit("chatterbox.s3gen.pre_lookahead", h.s3gen.pre_lookahead);
    visit("chatterbox.s3gen.token_mel_ratio", h.s3gen.token_mel_ratio);
    visit("chatterbox.s3gen.mel_bins", h.s3gen.mel_bins);
    visit("chatterbox.s3gen.speaker_emb", h.s3gen.speaker_emb);
    visit("chatterbox.s3gen.decoder_channels", h.s3gen.decoder_channels);
    visit("chatterbox.s3gen.decoder_heads", h.s3gen.decoder_heads);
    visit("chatterbox.s3gen.decoder_head_dim", h.s3gen.decoder_head_dim);
    visit("chatterbox.s3gen.decoder_transformer_blocks", h.s3gen.decoder_transformer_blocks);
    visit("chatterbox.s3gen.decoder_mid_blocks", h.s3gen.decoder_mid_blocks);
    visit("chatterbox.s3gen.cfm_steps", h.s3gen.cfm_steps);
    visit("chatterbox.s3gen.cfm_cfg_rate", h.s3gen.cfm_cfg_rate);
    visit("chatterbox.s3gen.sample_rate", h.s3gen.sample_rate);

    visit("chatterbox.hift.base_channels", h.hift.base_channels);
    visit("chatterbox.hift.n_harmonics", h.hift.n_harmonics);
    visit("chatterbox.hift.upsample_rates", h.hift.upsample_rates);
    visit("chatterbox.hift.upsample_kernels", h.hift.upsample_kernels);
    visit("chatterbox.hift.resblock_kernels", h.hift.resblock_kernels);
    visit("chatterbox.hift.source_resblock_kernels", h.hift.source_resblock_kernels);
    visit("chatterbox.hift.istft_n_fft", h.hift.istft_n_fft);
    visit("chatterbox.hift.istft_hop", h.hift.istft_hop);
    visit("chatterbox.hift.sample_rate", h.hift.sample_rate);
}

std::string read_text_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot open ", path);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) fail("cannot read ", path);
    return text.str();
}

// The built-in voice fields in conds.pt ({"t3": {...}, "gen": {...}}), in BuiltinVoice order;
// the store names them conds.<group>.<key>.
struct VoiceField {
    const char *group;
    const char *key;
};
constexpr VoiceField kVoiceFields[] = {
    {"t3", "speaker_emb"},  {"t3", "cond_prompt_speech_tokens"},
    {"t3", "emotion_adv"},  {"gen", "prompt_token"},
    {"gen", "prompt_feat"}, {"gen", "embedding"},
};

// conds.pt field `key` of dict `group` as an in-memory tensor named conds.<group>.<key>.
HostTensor conds_tensor(const PtValue &root, const std::string &path, const std::string &group,
                        const std::string &key) {
    const PtValue *dict = root.find(group);
    if (!dict || dict->kind != PtValue::Kind::Dict)
        fail(path, ": expected a dict under \"", group, "\" (the built-in voice), got ",
             dict ? dict->kind_name() : std::string("nothing"));
    const PtValue *value = dict->find(key);
    if (!value || value->kind != PtValue::Kind::Tensor || !value->tensor)
        fail(path, ": ", group, ".", key, " should be a tensor, got ",
             value ? value->kind_name() : std::string("nothing"));
    HostTensor t = *value->tensor;
    t.name = "conds." + group + "." + key;
    return t;
}

void check_voice_tensor(const std::string &path, const TensorView &t, ggml_type type, const Shape &expected) {
    bool ok = t.type == type && t.shape.size() == expected.size();
    for (size_t i = 0; ok && i < expected.size(); ++i) ok = expected[i] < 0 || t.shape[i] == expected[i];
    if (!ok) {
        std::string want = "[";
        for (size_t i = 0; i < expected.size(); ++i)
            want += (i ? ", " : "") + (expected[i] < 0 ? std::string("N") : std::to_string(expected[i]));
        fail(path, ": built-in voice tensor ", t.name, " is ", ggml_type_name(t.type), " ", shape_str(t.shape),
             ", expected ", ggml_type_name(type), " ", want, "]");
    }
}

void check_token_range(const std::string &path, const TensorView &t, int64_t vocab) {
    const std::vector<int64_t> ids = to_i64(t);
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= vocab)
            fail(path, ": built-in voice tensor ", t.name, " holds token ", ids[i], " at index ", i,
                 ", outside the vocabulary [0, ", vocab, ")");
}

} // namespace

void ModelHparams::write_metadata(GgufWriter &writer) const {
    writer.set_string(kVariant, variant);
    visit_fields(*this, [&](const char *key, const auto &value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, int64_t>)
            writer.set_int(key, value);
        else if constexpr (std::is_same_v<T, double>)
            writer.set_float(key, value);
        else
            writer.set_int_array(key, value);
    });
}

ModelHparams ModelHparams::from_metadata(const GgufFile &file) {
    ModelHparams h;
    h.variant = file.get_string(kVariant);
    visit_fields(h, [&](const char *key, auto &value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, int64_t>)
            value = file.get_int(key);
        else if constexpr (std::is_same_v<T, double>)
            value = file.get_float(key);
        else
            value = file.get_int_array(key);
    });
    return h;
}

const std::vector<ModelComponent> &model_components() {
    static const std::vector<ModelComponent> components = {
        {"ve", "ve.safetensors", "ve."},
        {"t3", "t3_cfg.safetensors", "t3."},
        {"s3gen", "s3gen.safetensors", "s3gen."},
    };
    return components;
}

const std::vector<std::string> &builtin_voice_tensor_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const VoiceField &f : kVoiceFields) out.push_back(concat("conds.", f.group, ".", f.key));
        return out;
    }();
    return names;
}

ModelFiles ModelFiles::open(const std::string &path) {
    ModelFiles files;
    files.path_ = path;
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status))
        fail(path, ": no such file or folder — expected the official Chatterbox folder (ve/t3_cfg/s3gen "
                   ".safetensors, tokenizer.json, conds.pt) or a .gguf from chatterbox-convert");
    if (fs::is_directory(status))
        files.open_folder(path);
    else
        files.open_gguf(path);
    files.read_builtin_voice();
    return files;
}

bool ModelFiles::has_component(const std::string &name) const {
    return std::find(components_.begin(), components_.end(), name) != components_.end();
}

const std::string &ModelFiles::tokenizer_json() const {
    if (!tokenizer_json_) fail(path_, ": the model has no tokenizer (tokenizer.json)");
    return *tokenizer_json_;
}

void ModelFiles::open_folder(const std::string &dir) {
    for (const ModelComponent &c : model_components())
        if (!fs::is_regular_file(fs::path(dir) / c.folder_file))
            fail(dir, ": no ", c.folder_file,
                 " — expected the official Chatterbox folder (ve/t3_cfg/s3gen .safetensors, tokenizer.json, "
                 "conds.pt) or a .gguf from chatterbox-convert");
    for (const ModelComponent &c : model_components()) {
        store_.add_safetensors((fs::path(dir) / c.folder_file).string(), c.prefix);
        components_.push_back(c.name);
    }
    const fs::path tokenizer = fs::path(dir) / "tokenizer.json";
    if (fs::exists(tokenizer)) tokenizer_json_ = read_text_file(tokenizer.string());

    const fs::path conds = fs::path(dir) / "conds.pt";
    if (fs::exists(conds)) {
        const PtValue root = load_torch_pt(conds.string());
        if (root.kind != PtValue::Kind::Dict)
            fail(conds.string(), ": expected a dict {t3, gen} (the built-in voice), got ", root.kind_name());
        for (const VoiceField &f : kVoiceFields) store_.add_tensor(conds_tensor(root, conds.string(), f.group, f.key));
    }
    hparams_ = ModelHparams::english();
}

void ModelFiles::open_gguf(const std::string &file) {
    store_.add_gguf(file);
    const GgufFile &gguf = *store_.gguf();
    if (!gguf.has_key(kVariant))
        fail(file, ": a GGUF file but not a Chatterbox model (no ", kVariant,
             " metadata) — convert the official folder with chatterbox-convert");
    hparams_ = ModelHparams::from_metadata(gguf);
    components_ = gguf.get_string_array(kComponents);
    for (const std::string &component : components_) {
        const auto &known_components = model_components();
        const auto known = std::find_if(known_components.begin(), known_components.end(),
                                        [&](const ModelComponent &c) { return component == c.name; });
        if (known == known_components.end())
            fail(file, ": unknown component \"", component, "\" in ", kComponents, " (known: ve, t3, s3gen)");
        if (store_.names_with_prefix(known->prefix).empty())
            fail(file, ": component ", component, " is listed in ", kComponents, " but the file has no ", known->prefix,
                 "* tensors");
    }
    if (gguf.has_key(kTokenizerJson)) tokenizer_json_ = gguf.get_string(kTokenizerJson);
}

void ModelFiles::read_builtin_voice() {
    const auto &names = builtin_voice_tensor_names();
    std::vector<const TensorView *> views;
    std::string missing;
    size_t n_missing = 0;
    for (const std::string &name : names) {
        views.push_back(store_.find(name));
        if (!views.back()) missing += (n_missing++ ? ", " : "") + name;
    }
    if (n_missing == 0) {
        const T3Hparams &t3 = hparams_.t3;
        const S3GenHparams &gen = hparams_.s3gen;
        check_voice_tensor(path_, *views[0], GGML_TYPE_F32, {1, t3.speaker_emb});
        check_voice_tensor(path_, *views[1], GGML_TYPE_I64, {1, -1});
        check_voice_tensor(path_, *views[2], GGML_TYPE_F32, {1, 1, 1});
        check_voice_tensor(path_, *views[3], GGML_TYPE_I64, {1, -1});
        check_voice_tensor(path_, *views[4], GGML_TYPE_F32, {1, -1, gen.mel_bins});
        check_voice_tensor(path_, *views[5], GGML_TYPE_F32, {1, gen.speaker_emb});
        check_token_range(path_, *views[1], t3.start_speech_token); // real speech tokens, below SOS
        check_token_range(path_, *views[3], gen.token_vocab);
        voice_ = BuiltinVoice{HostTensor::from_view(*views[0]), HostTensor::from_view(*views[1]),
                              HostTensor::from_view(*views[2]), HostTensor::from_view(*views[3]),
                              HostTensor::from_view(*views[4]), HostTensor::from_view(*views[5])};
    } else if (n_missing < names.size()) {
        // Some but not all: a damaged file rather than a model without a voice.
        fail(path_, ": the built-in voice is incomplete: no ", missing);
    }
}

} // namespace chatterbox
