#include "models/chatterbox/model_files.h"

#include "models/chatterbox/variant_spec.h"

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/torch_pickle.h"
#include "text/bpe_tokenizer.h"
#include "text/cangjie.h"

#include <algorithm>
#include <filesystem>

namespace chatterbox {

namespace fs = std::filesystem;

namespace {

using model_keys::kComponents;
using model_keys::kTokenizerJson;
using model_keys::kVariant;

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

namespace {

// What a variant does that no tensor or metadata key says (variant_spec.h): its speech guards and
// sampler recipe, the last-token trim.
void set_variant_behaviour(ModelHparams &h) {
    const VariantSpec &spec = variant_spec(h.variant);
    h.t3.variant = h.variant;
    h.t3.guards = spec.t3.guards;
    h.t3.sampler = spec.t3.sampler;
    h.flow.trim_last_token = spec.flow.trim_last_token;
}

} // namespace

ModelHparams ModelHparams::for_variant(Variant variant) {
    ModelHparams h;
    h.variant = variant;
    h.t3 = variant_spec(variant).t3;
    h.flow = variant_spec(variant).flow;
    set_variant_behaviour(h);
    return h;
}

ModelHparams ModelHparams::from_checkpoints(const WeightStore &store, Variant variant) {
    ModelHparams h = for_variant(variant);
    h.t3 = t3::HParams::from_checkpoint(store, "t3.", variant_spec(variant).t3);
    h.flow = s3gen::FlowHParams::from_checkpoint(store, "s3gen.flow.");
    h.hift = hift::HiftHParams::from_checkpoint(store, "s3gen.mel2wav.");
    h.s3tokenizer = s3tokenizer::S3TokenizerHParams::from_checkpoint(store, "s3gen.tokenizer.");
    set_variant_behaviour(h);
    h.validate();
    return h;
}

void ModelHparams::write_metadata(GgufWriter &writer) const {
    writer.set_string(kVariant, variant_name(variant));
    visit_component_hparams(*this,
                            [&](const auto &table, const auto &component) { write_fields(table, component, writer); });
}

ModelHparams ModelHparams::from_metadata(const GgufFile &file) {
    ModelHparams h;
    try {
        h = for_variant(parse_variant(file.get_string(kVariant)));
    } catch (const Error &e) {
        fail(file.path(), ": ", kVariant, ": ", e.what());
    }
    try {
        visit_component_hparams(h, [&](const auto &table, auto &component) { component = read_fields(table, file); });
    } catch (const Error &e) {
        // New hyper-parameters join the tables as the engine grows; older files lack them.
        fail(e.what(), " (a GGUF written by an older chatterbox-convert lacks newer keys: convert the model again)");
    }
    set_variant_behaviour(h); // not metadata: the variant's
    try {
        h.validate();
    } catch (const Error &e) {
        fail(file.path(), ": ", e.what());
    }
    return h;
}

void ModelHparams::validate() const {
    visit_component_hparams(*this, [](const auto &, const auto &component) { component.validate(); });
    if (t3.speaker_embed != ve.embedding)
        fail("chatterbox.t3.speaker_embed ", t3.speaker_embed, " must equal chatterbox.ve.embedding ", ve.embedding);
    if (flow.speaker_dim != campplus.embedding)
        fail("chatterbox.s3gen.speaker_dim ", flow.speaker_dim, " must equal chatterbox.campplus.embedding ",
             campplus.embedding);
    if (flow.vocab != s3tokenizer.vocab)
        fail("chatterbox.s3gen.token_vocab ", flow.vocab, " must equal chatterbox.s3tokenizer.vocab ",
             s3tokenizer.vocab);
    if (t3.speech_token_limit > flow.vocab)
        fail("chatterbox.t3.speech_token_limit ", t3.speech_token_limit, " exceeds chatterbox.s3gen.token_vocab ",
             flow.vocab, " (T3's speech tokens are the flow's input)");
    if (hift.mel_bins != flow.mel_bins)
        fail("chatterbox.hift.mel_bins ", hift.mel_bins, " must equal chatterbox.s3gen.mel_bins ", flow.mel_bins);
}

const std::vector<ModelComponent> &model_components() {
    static const std::vector<ModelComponent> components = {{"ve", "ve."}, {"t3", "t3."}, {"s3gen", "s3gen."}};
    return components;
}

const char *OfficialFolder::component_file(const std::string &component) const {
    const auto &all = model_components();
    for (size_t i = 0; i < all.size(); ++i)
        if (component == all[i].name) return files.at(i);
    fail("unknown model component \"", component, "\" (known: ve, t3, s3gen)");
}

bool OfficialFolder::answers_t3_model(const std::string &name) const {
    const std::string file = component_file("t3");
    return (t3_model && name == t3_model) || name == file || name == fs::path(file).stem().string();
}

std::string OfficialFolder::local_folder_name() const {
    if (local_folder) return local_folder;
    const std::string name = repo;
    return name.substr(name.find('/') + 1);
}

std::vector<std::string> OfficialFolder::all_files() const {
    std::vector<std::string> out(tokenizer.begin(), tokenizer.end());
    out.push_back("conds.pt");
    // The checkpoints, smallest first: ve, s3gen, t3.
    out.insert(out.begin() + std::ptrdiff_t(tokenizer.size()), optional_files.begin(), optional_files.end());
    for (const char *component : {"ve", "s3gen", "t3"}) out.push_back(component_file(component));
    return out;
}

const std::vector<OfficialFolder> &official_folders() {
    static const std::vector<OfficialFolder> folders = [] {
        std::vector<OfficialFolder> all;
        for (const VariantSpec *spec : variant_specs())
            all.insert(all.end(), spec->folders.begin(), spec->folders.end());
        return all;
    }();
    return folders;
}

const OfficialFolder &official_folder(Variant variant) {
    for (const OfficialFolder &folder : official_folders())
        if (folder.variant == variant) return folder;
    fail("no official folder layout for the ", variant_name(variant), " variant");
}

namespace {

std::string folder_tokenizer_json(const std::string &dir, const OfficialFolder &folder) {
    // One JSON file is the tokenizer.json document under its own name; several are GPT-2's files.
    return text::BpeTokenizer::json_document(folder.tokenizer.size() == 1 ? dir + "/" + folder.tokenizer.front() : dir);
}

} // namespace

std::string official_tokenizer_json(const std::string &dir, Variant variant) {
    return folder_tokenizer_json(dir, official_folder(variant));
}

std::optional<std::string> folder_cangjie_json(const std::string &dir) {
    const fs::path path = fs::path(dir) / text::kCangjieFile;
    if (!fs::is_regular_file(path)) return std::nullopt;
    const MappedFile file(path.string());
    return std::string(reinterpret_cast<const char *>(file.data()), file.size());
}

std::string checkpoint_component(const std::string &file) {
    for (const OfficialFolder &folder : official_folders())
        for (const ModelComponent &c : model_components())
            if (file == folder.component_file(c.name)) return c.name;
    fail("unknown official checkpoint file ", file);
}

const std::vector<std::string> &builtin_voice_tensor_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const VoiceField &f : kVoiceFields) out.push_back(concat("conds.", f.group, ".", f.key));
        return out;
    }();
    return names;
}

namespace {

// "v2 (t3_mtl23ls_v2.safetensors), v3 (t3_mtl23ls_v3.safetensors)": the T3 choices of a variant.
std::string t3_model_choices(Variant variant) {
    std::string out;
    for (const OfficialFolder &folder : official_folders())
        if (folder.variant == variant && folder.t3_model)
            out += concat(out.empty() ? "" : ", ", folder.t3_model, " (", folder.component_file("t3"), ")");
    return out;
}

// The official folder whose T3 `name` asks for among the variant's; throws Error (prefixed with `where`)
// for a variant with one T3 or a name none answers to.
const OfficialFolder &t3_model_folder(const std::string &where, Variant variant, const std::string &name) {
    const std::string choices = t3_model_choices(variant);
    if (choices.empty())
        fail(where, ": t3_model \"", name, "\" asks for one of the multilingual model's T3 checkpoints (",
             t3_model_choices(Variant::multilingual), "), but this is the ", variant, " model, which has one T3");
    for (const OfficialFolder &folder : official_folders())
        if (folder.variant == variant && folder.t3_model && folder.answers_t3_model(name)) return folder;
    fail(where, ": unknown t3_model \"", name, "\" (choose among ", choices, ")");
}

} // namespace

ModelFiles ModelFiles::open(const std::string &path, const ModelOpenOptions &options) {
    ModelFiles files;
    files.path_ = path;
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status))
        fail(path, ": no such file or folder — expected the official Chatterbox folder (ve/t3_cfg/s3gen "
                   ".safetensors, tokenizer.json, conds.pt) or a .gguf from chatterbox-convert");
    if (fs::is_directory(status))
        files.open_folder(path, options);
    else
        files.open_gguf(path, options);
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

namespace {

// The official folder dir holds, told by its T3 file (its variant's first present, or the one
// t3_model asks for); throws Error listing what was looked for.
const OfficialFolder &folder_layout(const std::string &dir, const std::string &t3_model) {
    std::string t3_files;
    for (const OfficialFolder &folder : official_folders()) {
        if (fs::is_regular_file(fs::path(dir) / folder.component_file("t3"))) {
            if (t3_model.empty()) return folder;
            const OfficialFolder &chosen = t3_model_folder(dir, folder.variant, t3_model);
            if (!fs::is_regular_file(fs::path(dir) / chosen.component_file("t3")))
                fail(dir, ": t3_model \"", t3_model, "\" asks for ", chosen.component_file("t3"),
                     ", which the folder does not hold (looked for ", t3_model_choices(chosen.variant), ")");
            return chosen;
        }
        t3_files += concat(t3_files.empty() ? "" : ", ", folder.component_file("t3"), " (", folder.variant, ")");
    }
    fail(dir, ": no T3 checkpoint (", t3_files,
         ") — expected an official Chatterbox folder (ve, t3, s3gen .safetensors, the tokenizer, conds.pt) or a "
         ".gguf from chatterbox-convert");
}

// A checkpoint of the folder: the file as published, or for a torch pickle (ve.pt) the same
// checkpoint as safetensors (ve.safetensors); empty when neither is there.
fs::path checkpoint_path(const std::string &dir, const std::string &file) {
    const fs::path published = fs::path(dir) / file;
    if (fs::is_regular_file(published)) return published;
    if (published.extension() == ".pt") {
        const fs::path safetensors = fs::path(published).replace_extension(".safetensors");
        if (fs::is_regular_file(safetensors)) return safetensors;
    }
    return {};
}

// A torch.save'd state dict {name: tensor}, each tensor into the store under prefix.
void add_torch_state_dict(WeightStore &store, const fs::path &path, const std::string &prefix) {
    const PtValue root = load_torch_pt(path.string());
    if (root.kind != PtValue::Kind::Dict)
        fail(path.string(), ": expected a state dict {name: tensor}, got ", root.kind_name());
    for (const auto &[key, value] : root.entries) {
        if (key.kind != PtValue::Kind::String || value.kind != PtValue::Kind::Tensor || !value.tensor)
            fail(path.string(), ": expected a state dict {name: tensor}; entry ", key.string, " is ",
                 value.kind_name());
        HostTensor tensor = *value.tensor;
        tensor.name = prefix + key.string;
        store.add_tensor(std::move(tensor));
    }
}

} // namespace

void ModelFiles::open_folder(const std::string &dir, const ModelOpenOptions &options) {
    const OfficialFolder &layout = folder_layout(dir, options.t3_model);
    if (layout.t3_model) t3_model_ = layout.t3_model;
    for (const ModelComponent &c : model_components())
        if (checkpoint_path(dir, layout.component_file(c.name)).empty())
            fail(dir, ": no ", layout.component_file(c.name), " — the official ", layout.variant,
                 " folder has ve, t3 and s3gen checkpoints (", layout.repo, ")");
    for (const ModelComponent &c : model_components()) {
        const fs::path checkpoint = checkpoint_path(dir, layout.component_file(c.name));
        if (checkpoint.extension() == ".pt")
            add_torch_state_dict(store_, checkpoint, c.prefix);
        else
            store_.add_safetensors(checkpoint.string(), c.prefix);
        components_.push_back(c.name);
    }
    if (fs::exists(fs::path(dir) / layout.tokenizer.front())) tokenizer_json_ = folder_tokenizer_json(dir, layout);
    if (std::count(layout.optional_files.begin(), layout.optional_files.end(), std::string(text::kCangjieFile)))
        cangjie_json_ = folder_cangjie_json(dir);

    const fs::path conds = fs::path(dir) / "conds.pt";
    if (fs::exists(conds)) {
        const PtValue root = load_torch_pt(conds.string());
        if (root.kind != PtValue::Kind::Dict)
            fail(conds.string(), ": expected a dict {t3, gen} (the built-in voice), got ", root.kind_name());
        for (const VoiceField &f : kVoiceFields) store_.add_tensor(conds_tensor(root, conds.string(), f.group, f.key));
    }
    try {
        hparams_ = ModelHparams::from_checkpoints(store_, layout.variant);
    } catch (const Error &e) {
        fail(dir, ": ", e.what());
    }
}

void ModelFiles::open_gguf(const std::string &file, const ModelOpenOptions &options) {
    store_.add_gguf(file);
    const GgufFile &gguf = *store_.gguf();
    if (!gguf.has_key(kVariant))
        fail(file, ": a GGUF file but not a Chatterbox model (no ", kVariant,
             " metadata) — convert the official folder with chatterbox-convert");
    hparams_ = ModelHparams::from_metadata(gguf);
    if (gguf.has_key(model_keys::kT3Model)) t3_model_ = gguf.get_string(model_keys::kT3Model);
    if (!options.t3_model.empty()) {
        // A GGUF holds one T3: the one asked for must be the one it was converted from.
        const OfficialFolder &chosen = t3_model_folder(file, hparams_.variant, options.t3_model);
        if (t3_model_ != chosen.t3_model)
            fail(file, ": t3_model \"", options.t3_model, "\" asks for ", chosen.component_file("t3"),
                 ", but this GGUF ",
                 t3_model_.empty() ? std::string("does not say which T3 it holds (") + model_keys::kT3Model + ")"
                                   : "holds " + t3_model_,
                 " — convert the official folder with --t3-model ", chosen.t3_model);
    }
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
    if (gguf.has_key(model_keys::kCangjieJson)) cangjie_json_ = gguf.get_string(model_keys::kCangjieJson);
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
        const t3::HParams &t3 = hparams_.t3;
        const s3gen::FlowHParams &gen = hparams_.flow;
        check_voice_tensor(path_, *views[0], GGML_TYPE_F32, {1, t3.speaker_embed});
        check_voice_tensor(path_, *views[1], GGML_TYPE_I64, {1, -1});
        check_voice_tensor(path_, *views[2], GGML_TYPE_F32, {1, 1, 1});
        check_voice_tensor(path_, *views[3], GGML_TYPE_I64, {1, -1});
        check_voice_tensor(path_, *views[4], GGML_TYPE_F32, {1, -1, gen.mel_bins});
        check_voice_tensor(path_, *views[5], GGML_TYPE_F32, {1, gen.speaker_dim});
        check_token_range(path_, *views[1], t3.start_speech_token); // real speech tokens, below SOS
        check_token_range(path_, *views[3], gen.vocab);
        voice_ = BuiltinVoice{HostTensor::from_view(*views[0]), HostTensor::from_view(*views[1]),
                              HostTensor::from_view(*views[2]), HostTensor::from_view(*views[3]),
                              HostTensor::from_view(*views[4]), HostTensor::from_view(*views[5])};
    } else if (n_missing < names.size()) {
        // Some but not all: a damaged file rather than a model without a voice.
        fail(path_, ": the built-in voice is incomplete: no ", missing);
    }
}

} // namespace chatterbox
