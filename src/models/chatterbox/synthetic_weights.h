#pragma once
// Deterministic synthetic checkpoints: every tensor of the official safetensors files of a variant
// (English: ve / t3_cfg / s3gen; Turbo: ve / t3_turbo_v1 / s3gen_meanflow), with values from the
// rule in shared/golden/WEIGHTS.md. Tests and benchmarks run on them, since the real weights
// cannot be downloaded here.

#include "core/tensor.h"
#include "models/chatterbox/variant.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chatterbox {
struct ModelHparams;
}

namespace chatterbox::synthetic {

constexpr uint64_t kDefaultSeed = 0x5EEDC0DE;

uint64_t fnv1a64(std::string_view bytes);

// SplitMix64 as WEIGHTS.md defines it.
struct SplitMix64 {
    uint64_t state;
    uint64_t next();
};

// One tensor of an official checkpoint, as the embedded manifest lists it.
struct ManifestTensor {
    std::string name;
    Shape shape;
    ggml_type type;   // GGML_TYPE_F32 or GGML_TYPE_I64
    std::string rule; // WEIGHTS.md rule id ("fan_in", "bias", ...; "computed_constant_not_saved")
    bool stored;      // false for computed constants the official file leaves out
};

struct ManifestCheckpoint {
    std::string file; // "ve.safetensors", "t3_cfg.safetensors", "s3gen.safetensors"
    std::vector<ManifestTensor> tensors;
};

// The tensor list of a variant's official checkpoints (compiled into the library); English and
// Turbo (Nano's checkpoints are Turbo's at GPT-2 small's sizes). Throws Error for the others.
const std::vector<ManifestCheckpoint> &official_manifest(Variant variant = Variant::english);

// The WEIGHTS.md rule id for a tensor of any variant ("computed_constant_not_saved" is never
// returned; "computed_constant" for the S3Tokenizer's mel filters and window, which Turbo stores).
std::string rule_for(const std::string &name, const Shape &shape);

// Fills dst (numel values of the tensor's type: f32, or int64 for num_batches_tracked); computed
// constants get the values the module computes (librosa mel filters, periodic Hann window).
void fill_tensor(const std::string &name, const Shape &shape, uint64_t seed, void *dst);

// Writes the variant's official safetensors files into out_dir (created if needed): English
// ve.safetensors, t3_cfg.safetensors, s3gen.safetensors; Turbo ve.safetensors,
// t3_turbo_v1.safetensors, s3gen_meanflow.safetensors; Nano Turbo's with t3_nano_v1.safetensors
// (GPT-2 small; WEIGHTS.md has no Nano rule, so Turbo's rule at Nano's shapes). Tokenizer files and conds.pt are not
// written (they are not made by the rule; the golden folders ship them).
void write_synthetic_model(const std::string &out_dir, uint64_t seed = kDefaultSeed,
                           Variant variant = Variant::english);
// The same file set at the sizes of hp (scaled_manifest; e.g. tiny_hparams(): an official-layout folder
// of a tiny model, for tests of the folder path).
void write_synthetic_folder(const std::string &out_dir, const ModelHparams &hp, uint64_t seed = kDefaultSeed);

// The tiny model: the variant's architecture (English: Llama T3 and the standard flow; Turbo, Nano:
// GPT-2 T3 and the mean flow) with 2 T3 layers of 128, one block of each kind in the flow, 2 CFM
// steps, a 64-channel HiFT and a 1-layer S3Tokenizer of 128. The VoiceEncoder and CAMPPlus keep
// their fixed full size, the vocabularies and position tables the variant's.
ModelHparams tiny_hparams(Variant variant = Variant::english);

// The stored tensors of a model with hyper-parameters hp, derived from the official manifest (English
// for a Llama T3, Turbo for a GPT-2 T3, e.g. Nano or a tiny GPT-2): widths
// that hp changes are replaced in every shape, numbered blocks beyond hp's counts left out. Names are
// the checkpoints' own (no store prefix); one list per manifest checkpoint. Throws Error when hp asks
// for more blocks than the official model has.
std::vector<ManifestCheckpoint> scaled_manifest(const ModelHparams &hp);

// Writes out_dir/model.gguf: the tiny model's tensors (filled by the WEIGHTS.md rule), its
// hyper-parameters, the tokenizer (tokenizer_json; "" for English's, built in) and a built-in voice
// drawn from the seed.
// cangjie_json: the multilingual model's Cangjie table to embed ("" for none).
void write_tiny_model(const std::string &out_dir, uint64_t seed = kDefaultSeed, Variant variant = Variant::english,
                      const std::string &tokenizer_json = "", const std::string &cangjie_json = "");

} // namespace chatterbox::synthetic
