#pragma once
// T3 hyper-parameters (spec t3.md §1): the Llama_520M backbone, the embedding tables, the
// conditioning encoder and the special tokens. English and multilingual differ only in the
// text vocabulary. Metadata keys "chatterbox.t3.*" (HParams::fields()).

#include "models/chatterbox/hparam_fields.h"
#include "models/chatterbox/variant.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox {
class WeightStore;
}

namespace chatterbox::t3 {

struct HParams {
    // Llama backbone (llama_configs.py "Llama_520M").
    int n_layers = 30;
    int hidden = 1024;
    int n_heads = 16; // no GQA: as many key/value heads
    int head_dim = 64;
    int ffn = 4096;
    float rms_eps = 1e-5f;
    float rope_theta = 500000.0f;
    // llama3 RoPE frequency scaling.
    float rope_factor = 8.0f;
    float rope_low_freq_factor = 1.0f;
    float rope_high_freq_factor = 4.0f;
    int rope_original_max_positions = 8192;

    // Vocabularies, special tokens and learned position tables (T3Config).
    int text_vocab = 704; // 2454 for multilingual v2/v3
    int speech_vocab = 8194;
    int start_text_token = 255;
    int stop_text_token = 0;
    int start_speech_token = 6561;
    int stop_speech_token = 6562;
    int speech_token_limit = 6561; // tokens >= this are not speech units (S3 vocab size)
    int text_positions = 2050;     // max_text_tokens + 2 rows of text_pos_emb
    int speech_positions = 4100;   // max_speech_tokens + 4 rows of speech_pos_emb

    // Conditioning encoder (cond_enc.py, perceiver.py).
    int speaker_embed = 256;
    int perceiver_queries = 32;
    int perceiver_heads = 4;
    float layer_norm_eps = 1e-5f;
    int speech_cond_prompt_len = 150; // speech tokens of a voice's T3 prompt (6 s at 25 Hz)

    // Not a metadata field of its own: the model's chatterbox.variant.
    Variant variant = Variant::english;

    bool is_multilingual() const { return variant == Variant::multilingual; }
    // Tokens the conditioning occupies: speaker + perceiver queries (when there is a prompt) + emotion.
    int cond_length(bool has_prompt) const { return 1 + (has_prompt ? perceiver_queries : 0) + 1; }
    // Longest framed text ([start] + ids + [stop]) the text position table can place.
    int max_framed_text() const { return text_positions; }
    // Generated token i is fed at speech position i + 1, so this many steps fit the position table.
    int max_new_tokens_limit() const { return speech_positions; }

    // The English configuration.
    static HParams english();
    // The published configuration of a Llama-T3 variant (english, multilingual).
    static HParams for_variant(Variant variant);
    // The variant's configuration with the sizes the T3 checkpoint in store under prefix ("t3.")
    // declares by its tensor shapes; a GPT-2 (Turbo/Nano) checkpoint is refused with a clear error.
    static HParams from_checkpoint(const WeightStore &store, const std::string &prefix, Variant variant);

    static const HparamTable<HParams> &fields();
    // The field rules, then the rules between fields; throws Error naming the keys.
    void validate() const;
};

// ggml rope freq_factors (one per rotated pair, head_dim / 2 values): the ratio between the
// plain RoPE frequency theta^(-2i/d) and its llama3-scaled value, as HF _compute_llama3_parameters.
std::vector<float> llama3_rope_freq_factors(const HParams &hp);

} // namespace chatterbox::t3
