#pragma once
// A Chatterbox model as files: either the official folder or one GGUF from chatterbox-convert.
// Both give the same things: every tensor by full name, the tokenizer JSON, the hyper-parameters
// (with the variant) and the built-in voice.
//
// Official folder                          GGUF from chatterbox-convert
//   ve.safetensors      -> "ve.*"            tensors under the same full names
//   t3_cfg.safetensors  -> "t3.*"            metadata "chatterbox.*" (ModelHparams::write_metadata)
//   s3gen.safetensors   -> "s3gen.*"         "tokenizer.huggingface.json" (the GGUF standard key)
//   tokenizer.json                           conds as tensors "conds.t3.*" / "conds.gen.*"
//   conds.pt (optional) -> "conds.t3.*", "conds.gen.*" (added to the store as in-memory tensors)

#include "core/gguf_file.h"
#include "core/weight_store.h"

#include <optional>
#include <string>
#include <vector>

namespace chatterbox {

// T3 (Llama-520M backbone for the English model); t3.md §1.
struct T3Hparams {
    int64_t n_layers = 30;
    int64_t hidden = 1024;
    int64_t n_heads = 16;
    int64_t n_kv_heads = 16;
    int64_t head_dim = 64;
    int64_t intermediate = 4096;
    double rms_eps = 1e-5;
    double rope_theta = 500000.0;
    // llama3 rope scaling
    double rope_factor = 8.0;
    double rope_low_freq_factor = 1.0;
    double rope_high_freq_factor = 4.0;
    int64_t rope_original_max_positions = 8192;
    int64_t text_vocab = 704;
    int64_t speech_vocab = 8194;
    int64_t start_text_token = 255;
    int64_t stop_text_token = 0;
    int64_t start_speech_token = 6561;
    int64_t stop_speech_token = 6562;
    int64_t max_text_tokens = 2048;   // text_pos_emb has max_text_tokens + 2 rows
    int64_t max_speech_tokens = 4096; // speech_pos_emb has max_speech_tokens + 4 rows
    int64_t speaker_emb = 256;
    int64_t perceiver_queries = 32;
    int64_t speech_cond_prompt_len = 150;
};

// VoiceEncoder (3-layer LSTM); voice_encoder.md §1.
struct VoiceEncoderHparams {
    int64_t n_mels = 40;
    int64_t hidden = 256;
    int64_t n_layers = 3;
    int64_t embedding = 256;
    int64_t partial_frames = 160;
    int64_t sample_rate = 16000;
};

// S3Gen flow (token embedding, upsampling conformer, CFM decoder); s3gen.md §1, §4–6.
struct S3GenHparams {
    int64_t token_vocab = 6561;
    int64_t encoder_dim = 512;
    int64_t encoder_heads = 8;
    int64_t encoder_ffn = 2048;
    int64_t encoder_blocks = 6;
    int64_t encoder_up_blocks = 4;
    int64_t pre_lookahead = 3;
    int64_t token_mel_ratio = 2;
    int64_t mel_bins = 80;
    int64_t speaker_emb = 192; // CAMPPlus x-vector
    int64_t decoder_channels = 256;
    int64_t decoder_heads = 8;
    int64_t decoder_head_dim = 64;
    int64_t decoder_transformer_blocks = 4; // per resnet block
    int64_t decoder_mid_blocks = 12;
    int64_t cfm_steps = 10;
    double cfm_cfg_rate = 0.7;
    int64_t sample_rate = 24000;
};

// HiFT vocoder; hift.md §1.
struct HiftHparams {
    int64_t base_channels = 512;
    int64_t n_harmonics = 8;
    std::vector<int64_t> upsample_rates = {8, 5, 3};
    std::vector<int64_t> upsample_kernels = {16, 11, 7};
    std::vector<int64_t> resblock_kernels = {3, 7, 11};
    std::vector<int64_t> source_resblock_kernels = {7, 7, 11};
    int64_t istft_n_fft = 16;
    int64_t istft_hop = 4;
    int64_t sample_rate = 24000;
};

struct ModelHparams {
    std::string variant = "english";
    T3Hparams t3;
    VoiceEncoderHparams ve;
    S3GenHparams s3gen;
    HiftHparams hift;

    static ModelHparams english() { return {}; }
    // Keys "chatterbox.variant", "chatterbox.t3.n_layers", ... (every field).
    void write_metadata(GgufWriter &writer) const;
    // Throws Error naming the file and the missing or mistyped key.
    static ModelHparams from_metadata(const GgufFile &file);
};

// GGUF metadata keys written by chatterbox-convert (besides ModelHparams' own).
namespace model_keys {
constexpr const char *kVariant = "chatterbox.variant";
constexpr const char *kComponents = "chatterbox.components";         // string array: "ve", "t3", "s3gen"
constexpr const char *kTokenizerJson = "tokenizer.huggingface.json"; // GGUF's standard key for tokenizer.json
} // namespace model_keys

// The model's components: name, file in the official folder, tensor-name prefix in the store.
struct ModelComponent {
    const char *name;
    const char *folder_file;
    const char *prefix;
};
const std::vector<ModelComponent> &model_components(); // ve, t3, s3gen

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

class ModelFiles {
public:
    // `path`: the official folder or a .gguf written by chatterbox-convert. Throws Error naming
    // the path and what is missing or wrong.
    static ModelFiles open(const std::string &path);

    const std::string &path() const { return path_; }
    bool is_gguf() const { return store_.gguf() != nullptr; }
    const WeightStore &weights() const { return store_; }
    const ModelHparams &hparams() const { return hparams_; }
    // Components present: "ve", "t3", "s3gen" (a GGUF may hold a subset).
    const std::vector<std::string> &components() const { return components_; }
    bool has_component(const std::string &name) const;

    bool has_tokenizer() const { return tokenizer_json_.has_value(); }
    const std::string &tokenizer_json() const; // throws when the model has none

    const std::optional<BuiltinVoice> &builtin_voice() const { return voice_; }

private:
    ModelFiles() = default;
    void open_folder(const std::string &dir);
    void open_gguf(const std::string &file);
    void read_builtin_voice(); // from the conds.* tensors of the store, validating their shapes

    std::string path_;
    WeightStore store_;
    ModelHparams hparams_;
    std::vector<std::string> components_;
    std::optional<std::string> tokenizer_json_;
    std::optional<BuiltinVoice> voice_;
};

} // namespace chatterbox
