#pragma once
// A Chatterbox model as files: either an official folder or one GGUF from chatterbox-convert.
// Both give the same things: every tensor by full name, the tokenizer JSON, the hyper-parameters
// (with the variant) and the built-in voice.
//
// Official folder (English; Turbo / Nano; multilingual) GGUF from chatterbox-convert
//   ve.safetensors                       -> "ve.*"     tensors under the same full names
//   t3_cfg.safetensors (t3_turbo_v1,                   metadata "chatterbox.*" (ModelHparams::write_metadata)
//     t3_nano_v1.safetensors)            -> "t3.*"     "tokenizer.huggingface.json" (the GGUF standard key)
//   s3gen.safetensors (s3gen_meanflow)   -> "s3gen.*"  conds as tensors "conds.t3.*" / "conds.gen.*"
//   tokenizer.json (GPT-2's vocab.json, merges.txt, added tokens)     "chatterbox.text.cangjie_json"
//   multilingual: ve.pt, t3_mtl23ls_v2 (or _v3).safetensors, s3gen.pt (torch pickles of state dicts; the
//     same checkpoint as .safetensors is read too), grapheme_mtl_merged_expanded_v1.json, Cangjie5_TC.json
//   conds.pt (optional) -> "conds.t3.*", "conds.gen.*" (added to the store as in-memory tensors)
// Which variant a folder holds is told by its T3 file (OfficialFolder).

#include "core/gguf_file.h"
#include "core/weight_store.h"
#include "models/chatterbox/campplus/campplus_hparams.h"
#include "models/chatterbox/hift/hift_hparams.h"
#include "models/chatterbox/s3gen/flow_hparams.h"
#include "models/chatterbox/s3tokenizer/s3tokenizer_hparams.h"
#include "models/chatterbox/t3/hparams.h"
#include "models/chatterbox/variant.h"
#include "models/chatterbox/voice_encoder/voice_encoder_hparams.h"

#include <optional>
#include <string>
#include <vector>

namespace chatterbox {

// The hyper-parameters of every component, and the variant they belong to. In a GGUF they are the
// metadata "chatterbox.variant" plus each component's field table (t3::HParams::fields(), ...);
// the official folder has the variant's published values with the sizes its tensor shapes declare.
struct ModelHparams {
    Variant variant = Variant::english;
    t3::HParams t3;
    voice_encoder::VoiceEncoderHParams ve;
    campplus::CampPlusHParams campplus;
    s3tokenizer::S3TokenizerHParams s3tokenizer;
    s3gen::FlowHParams flow;
    hift::HiftHParams hift;

    // The published configuration of a variant.
    static ModelHparams for_variant(Variant variant);
    // The variant's configuration with the sizes the checkpoints in store ("t3.*", "s3gen.*")
    // declare by their tensor shapes; throws Error naming a tensor the sizes cannot come from.
    static ModelHparams from_checkpoints(const WeightStore &store, Variant variant);
    // Keys "chatterbox.variant" and every field of every component table.
    void write_metadata(GgufWriter &writer) const;
    // Throws Error naming the file and the missing, mistyped or unsupported key.
    static ModelHparams from_metadata(const GgufFile &file);
    // Every component's rules, then those between components (T3's speaker embedding is the
    // VoiceEncoder's, ...); throws Error naming the keys.
    void validate() const;
};

// visit(field table, component struct) for every component of h (a ModelHparams, const or not):
// writing, reading and the tests all walk these same tables.
template <class Hparams, class Visit> void visit_component_hparams(Hparams &h, Visit &&visit) {
    visit(t3::HParams::fields(), h.t3);
    visit(voice_encoder::VoiceEncoderHParams::fields(), h.ve);
    visit(campplus::CampPlusHParams::fields(), h.campplus);
    visit(s3tokenizer::S3TokenizerHParams::fields(), h.s3tokenizer);
    visit(s3gen::FlowHParams::fields(), h.flow);
    visit(hift::HiftHParams::fields(), h.hift);
}

// GGUF metadata keys written by chatterbox-convert (besides ModelHparams' own).
namespace model_keys {
constexpr const char *kT3Model = "chatterbox.t3_model"; // the official T3 converted ("v2", "v3"), when chosen
constexpr const char *kVariant = "chatterbox.variant";
constexpr const char *kComponents = "chatterbox.components";         // string array: "ve", "t3", "s3gen"
constexpr const char *kTokenizerJson = "tokenizer.huggingface.json"; // GGUF's standard key for tokenizer.json
constexpr const char *kCangjieJson = "chatterbox.text.cangjie_json"; // multilingual: Cangjie5_TC.json as it is
} // namespace model_keys

// The model's components: name and tensor-name prefix in the store.
struct ModelComponent {
    const char *name;
    const char *prefix;
};
const std::vector<ModelComponent> &model_components(); // ve, t3, s3gen

// The official folder of a variant, as its loader (tts.py, tts_turbo.py) reads it from the hub.
struct OfficialFolder {
    Variant variant;
    const char *repo;                              // hub repository, e.g. "ResembleAI/chatterbox-turbo"
    std::vector<const char *> files;               // component files, in model_components() order
    std::vector<const char *> tokenizer;           // tokenizer.json, or GPT-2's files (BpeTokenizer::from_folder)
    std::vector<const char *> optional_files = {}; // read when present (multilingual: Cangjie5_TC.json)
    // The default local folder's name (model_download.h); nullptr: the repository's name. Multilingual
    // shares English's repository, not its folder, whose T3 file would be taken for English.
    const char *local_folder = nullptr;
    // The name a load asks for this folder's T3 by (ModelOpenOptions::t3_model: "v2", "v3"), when a
    // variant has several; nullptr: the variant's only T3.
    const char *t3_model = nullptr;
    std::string local_folder_name() const;
    // True when `name` asks for this folder's T3: its t3_model, or its T3 file's name with or without
    // the extension (mtl_tts.py's t3_model accepts "v3", "t3_mtl23ls_v3", "t3_mtl23ls_v3.safetensors").
    bool answers_t3_model(const std::string &name) const;
    const char *component_file(const std::string &component) const; // throws for an unknown component
    // Every file, small ones first (tokenizer, optional files, conds.pt, then the checkpoints): what a
    // download fetches.
    std::vector<std::string> all_files() const;
};
// The folders this engine reads (English, multilingual v2 and v3, Turbo, Nano). A variant's first
// folder is its default (multilingual: v2, as mtl_tts.py); a folder is told by its T3 file.
const std::vector<OfficialFolder> &official_folders();
// The variant's default folder; throws Error for a variant without an official folder this engine reads.
const OfficialFolder &official_folder(Variant variant);
// The tokenizer.json document of a folder holding the variant's tokenizer files (tokenizer.json, GPT-2's
// files, or multilingual's grapheme_mtl_merged_expanded_v1.json); throws Error naming what is missing.
std::string official_tokenizer_json(const std::string &dir, Variant variant);
// dir/Cangjie5_TC.json as it is, when there (the multilingual model's Chinese table).
std::optional<std::string> folder_cangjie_json(const std::string &dir);
// The component ("ve", "t3", "s3gen") an official checkpoint file of any variant holds; throws Error
// for another name.
std::string checkpoint_component(const std::string &file);

// The built-in voice (conds.pt): T3 part and S3Gen reference. Shapes in PyTorch order.
struct BuiltinVoice {
    HostTensor speaker_emb;               // f32 (1, 256)
    HostTensor cond_prompt_speech_tokens; // i64 (1, N)
    HostTensor emotion_adv;               // f32 (1, 1, 1)
    HostTensor prompt_token;              // i64 (1, Np)
    HostTensor prompt_feat;               // f32 (1, F, 80), F = 2·Np normally
    HostTensor embedding;                 // f32 (1, 192)
};

// Store names of the built-in voice tensors ("conds.t3.speaker_emb", ...), in BuiltinVoice order.
const std::vector<std::string> &builtin_voice_tensor_names();

// How to read a model whose official folder offers a choice.
struct ModelOpenOptions {
    // Which T3 of a variant with several (multilingual: "v2", "v3", or the file's name); empty: the
    // variant's default that the folder holds (multilingual: v2, else v3). Asking for one the folder
    // does not hold, or of a variant without a choice, is an Error naming the files looked for.
    std::string t3_model;
};

class ModelFiles {
  public:
    // `path`: the official folder or a .gguf written by chatterbox-convert. Throws Error naming
    // the path and what is missing or wrong.
    static ModelFiles open(const std::string &path, const ModelOpenOptions &options = {});

    const std::string &path() const { return path_; }
    bool is_gguf() const { return store_.gguf() != nullptr; }
    const WeightStore &weights() const { return store_; }
    const ModelHparams &hparams() const { return hparams_; }
    // Components present: "ve", "t3", "s3gen" (a GGUF may hold a subset).
    const std::vector<std::string> &components() const { return components_; }
    bool has_component(const std::string &name) const;

    bool has_tokenizer() const { return tokenizer_json_.has_value(); }
    // The tokenizer.json document (for GPT-2's files, the one BpeTokenizer::from_folder builds);
    // throws when the model has none.
    const std::string &tokenizer_json() const;
    // The multilingual model's Cangjie table (Cangjie5_TC.json), when it has one.
    const std::optional<std::string> &cangjie_json() const { return cangjie_json_; }

    const std::optional<BuiltinVoice> &builtin_voice() const { return voice_; }
    // The T3 chosen among a variant's several ("v2", "v3"; a GGUF's chatterbox.t3_model); empty when
    // the variant has one T3 or a GGUF does not say.
    const std::string &t3_model() const { return t3_model_; }

  private:
    ModelFiles() = default;
    void open_folder(const std::string &dir, const ModelOpenOptions &options);
    void open_gguf(const std::string &file, const ModelOpenOptions &options);
    void read_builtin_voice(); // from the conds.* tensors of the store, validating their shapes

    std::string path_;
    WeightStore store_;
    ModelHparams hparams_;
    std::vector<std::string> components_;
    std::optional<std::string> tokenizer_json_;
    std::optional<std::string> cangjie_json_;
    std::optional<BuiltinVoice> voice_;
    std::string t3_model_;
};

} // namespace chatterbox
