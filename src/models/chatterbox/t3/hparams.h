#pragma once
// T3 hyper-parameters (spec t3.md §1, variants.md §1): the backbone (Llama_520M for English and
// multilingual, GPT-2 medium / small for Turbo / Nano), the embedding tables, the conditioning
// encoder, the layout of the prefill and the special tokens. Metadata keys "chatterbox.t3.*"
// (HParams::fields()); which backbone and prefix layout a model has is data here, read by the
// model, embeddings and conditioning code, so the session and generation loop are shared.

#include "models/chatterbox/hparam_fields.h"
#include "models/chatterbox/t3/sampler.h"
#include "models/chatterbox/t3/speech_guards.h"
#include "models/chatterbox/variant.h"

#include <cstdint>
#include <string>
#include <vector>

namespace chatterbox {
class WeightStore;
}

namespace chatterbox::t3 {

// The decoder stack of T3 (llama_configs.py): stored as its int in metadata "chatterbox.t3.backbone".
enum class Backbone : int {
    llama = 0, // LlamaModel: RMSNorm, RoPE, SwiGLU, no biases
    gpt2 = 1,  // GPT2Model: learned absolute positions (wpe), LayerNorm, fused c_attn, GELU (tanh), biases
};

struct HParams {
    int backbone = int(Backbone::llama); // a Backbone
    // Decoder stack (llama_configs.py "Llama_520M"; GPT2_medium / GPT2_small for Turbo / Nano).
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
    // GPT-2 only: rows of the absolute position table tfmr.wpe (n_positions), the longest sequence
    // (conditioning + text + speech) the model places; 0 for Llama.
    int positions = 0;

    // Vocabularies, special tokens and learned position tables (T3Config).
    int text_vocab = 704; // 2454 for multilingual v2/v3
    int speech_vocab = 8194;
    int start_text_token = 255;
    int stop_text_token = 0;
    int start_speech_token = 6561;
    int stop_speech_token = 6562;
    int speech_token_limit = 6561; // tokens >= this are not speech units (S3 vocab size)
    // Learned T3 position tables (T3Config.input_pos_emb "learned"); both 0 when there are none (Turbo).
    int text_positions = 2050;   // max_text_tokens + 2 rows of text_pos_emb
    int speech_positions = 4100; // max_speech_tokens + 4 rows of speech_pos_emb
    // Prefill layout: text framed by [start_text] ... [stop_text] (1) or the bare ids (0, Turbo), and
    // how many BOS tokens end it (2 reproduce the reference's double BOS; Turbo feeds one).
    int framed_text = 1;
    int bos_tokens = 2;

    // Conditioning encoder (cond_enc.py, perceiver.py).
    int speaker_embed = 256;
    int perceiver_queries = 32; // 0: no perceiver, the prompt's speech embeddings go in as they are (Turbo)
    int perceiver_heads = 4;
    float layer_norm_eps = 1e-5f;
    int emotion_token = 1;            // 1: the conditioning ends with the emotion token (emotion_adv), 0: none
    int speech_cond_prompt_len = 150; // speech tokens of a voice's T3 prompt (6 s at 25 Hz; Turbo 375, 15 s)

    // Not a metadata field of its own: the model's chatterbox.variant.
    Variant variant = Variant::english;
    // Length bound, stop rules and aligned heads (speech_guards.h) and how a token is drawn
    // (sampler.h): the variant's (variant_spec.h), not metadata.
    GuardHParams guards = GuardHParams::with_aligned_heads();
    SamplerRecipe sampler = SamplerRecipe::tts();

    bool is_multilingual() const { return variant == Variant::multilingual; }
    Backbone backbone_kind() const { return Backbone(backbone); }
    bool has_perceiver() const { return perceiver_queries > 0; }
    bool has_learned_positions() const { return text_positions > 0; }
    // Tokens the conditioning occupies: speaker + prompt (perceiver queries or the prompt tokens
    // themselves) + emotion.
    int cond_length(int n_prompt_tokens) const {
        const int prompt = n_prompt_tokens == 0 ? 0 : has_perceiver() ? perceiver_queries : n_prompt_tokens;
        return 1 + prompt + emotion_token;
    }
    // Longest text (framed: [start] + ids + [stop]) one pass may take: the text position table, or
    // for a model without one its whole context.
    int max_framed_text() const { return has_learned_positions() ? text_positions : positions; }
    // Most generation steps: generated token i is fed at speech position i + 1, so as many as the
    // speech position table has rows; without one, the whole context (less the prefill, which
    // generate() checks).
    int max_new_tokens_limit() const { return has_learned_positions() ? speech_positions : positions; }
    // Longest speech prompt: the speech position table, or without one the backbone's context.
    int max_prompt_tokens() const { return has_learned_positions() ? speech_positions : positions; }
    // Longest sequence the backbone can place (0: no absolute limit, RoPE).
    int max_sequence() const { return positions; }

    // The English configuration (Llama_520M); each variant's is its VariantSpec::t3 (variant_spec.h).
    static HParams english();
    // The T3 of tts_turbo.py: T3Config(text_tokens_dict_size=50276) with a GPT-2 of this size (GPT2_medium
    // for Turbo, GPT2_small for Nano), speech vocabulary 6563, input_pos_emb None, a 375-token prompt, no
    // perceiver, no emotion_adv; Turbo's sampler recipe.
    static HParams gpt2(int n_layers, int hidden, int n_heads);
    // `published` (a variant's configuration) with the sizes the T3 checkpoint in store under prefix
    // ("t3.") declares by its tensor shapes. A checkpoint whose backbone is not the published one (a
    // GPT-2 checkpoint for english, say) is refused with a clear error.
    static HParams from_checkpoint(const WeightStore &store, const std::string &prefix, const HParams &published);

    static const HparamTable<HParams> &fields();
    // The field rules, then the rules between fields; throws Error naming the keys.
    void validate() const;
};

// ggml rope freq_factors (one per rotated pair, head_dim / 2 values): the ratio between the
// plain RoPE frequency theta^(-2i/d) and its llama3-scaled value, as HF _compute_llama3_parameters.
std::vector<float> llama3_rope_freq_factors(const HParams &hp);

} // namespace chatterbox::t3
