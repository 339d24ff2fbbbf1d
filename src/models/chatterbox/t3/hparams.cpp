#include "models/chatterbox/t3/hparams.h"

#include "core/error.h"
#include "core/weight_store.h"

#include <cmath>

namespace chatterbox::t3 {

HParams HParams::english() { return HParams{}; }

HParams HParams::for_variant(Variant variant) {
    require_supported(variant);
    HParams hp;
    hp.variant = variant;
    if (variant == Variant::multilingual) hp.text_vocab = 2454; // mtl_tts.py v2/v3 text vocabulary
    return hp;
}

const HparamTable<HParams> &HParams::fields() {
    using R = FieldRule;
    static const HparamTable<HParams> table = {
        {"chatterbox.t3.n_layers", &HParams::n_layers, R::positive},
        {"chatterbox.t3.hidden", &HParams::hidden, R::positive},
        {"chatterbox.t3.n_heads", &HParams::n_heads, R::positive},
        {"chatterbox.t3.head_dim", &HParams::head_dim, R::positive},
        {"chatterbox.t3.ffn", &HParams::ffn, R::positive},
        {"chatterbox.t3.rms_eps", &HParams::rms_eps, R::positive},
        {"chatterbox.t3.rope.theta", &HParams::rope_theta, R::positive},
        {"chatterbox.t3.rope.factor", &HParams::rope_factor, R::positive},
        {"chatterbox.t3.rope.low_freq_factor", &HParams::rope_low_freq_factor, R::positive},
        {"chatterbox.t3.rope.high_freq_factor", &HParams::rope_high_freq_factor, R::positive},
        {"chatterbox.t3.rope.original_max_positions", &HParams::rope_original_max_positions, R::positive},
        {"chatterbox.t3.text_vocab", &HParams::text_vocab, R::positive},
        {"chatterbox.t3.speech_vocab", &HParams::speech_vocab, R::positive},
        {"chatterbox.t3.start_text_token", &HParams::start_text_token, R::non_negative},
        {"chatterbox.t3.stop_text_token", &HParams::stop_text_token, R::non_negative},
        {"chatterbox.t3.start_speech_token", &HParams::start_speech_token, R::non_negative},
        {"chatterbox.t3.stop_speech_token", &HParams::stop_speech_token, R::non_negative},
        {"chatterbox.t3.speech_token_limit", &HParams::speech_token_limit, R::positive},
        {"chatterbox.t3.text_positions", &HParams::text_positions, R::positive},
        {"chatterbox.t3.speech_positions", &HParams::speech_positions, R::positive},
        {"chatterbox.t3.speaker_embed", &HParams::speaker_embed, R::positive},
        {"chatterbox.t3.perceiver_queries", &HParams::perceiver_queries, R::positive},
        {"chatterbox.t3.perceiver_heads", &HParams::perceiver_heads, R::positive},
        {"chatterbox.t3.layer_norm_eps", &HParams::layer_norm_eps, R::positive},
        {"chatterbox.t3.speech_cond_prompt_len", &HParams::speech_cond_prompt_len, R::positive},
    };
    return table;
}

void HParams::validate() const {
    validate_fields(fields(), *this);
    if (n_heads * head_dim != hidden)
        fail("chatterbox.t3.n_heads ", n_heads, " x chatterbox.t3.head_dim ", head_dim,
             " must equal chatterbox.t3.hidden ", hidden, " (no grouped-query attention)");
    if (head_dim % 2 != 0) fail("chatterbox.t3.head_dim is ", head_dim, "; RoPE needs an even head size");
    if (hidden % perceiver_heads != 0)
        fail("chatterbox.t3.perceiver_heads ", perceiver_heads, " does not divide chatterbox.t3.hidden ", hidden);
    if (rope_high_freq_factor <= rope_low_freq_factor)
        fail("chatterbox.t3.rope.high_freq_factor ", rope_high_freq_factor,
             " must exceed chatterbox.t3.rope.low_freq_factor ", rope_low_freq_factor);
    for (const auto &[key, token] :
         {std::pair{"start_text_token", start_text_token}, {"stop_text_token", stop_text_token}})
        if (token >= text_vocab)
            fail("chatterbox.t3.", key, " ", token, " is outside chatterbox.t3.text_vocab ", text_vocab);
    for (const auto &[key, token] :
         {std::pair{"start_speech_token", start_speech_token}, {"stop_speech_token", stop_speech_token}})
        if (token >= speech_vocab)
            fail("chatterbox.t3.", key, " ", token, " is outside chatterbox.t3.speech_vocab ", speech_vocab);
    if (speech_token_limit > start_speech_token)
        fail("chatterbox.t3.speech_token_limit ", speech_token_limit, " exceeds chatterbox.t3.start_speech_token ",
             start_speech_token, " (speech units lie below the special tokens)");
    if (text_positions < 3)
        fail("chatterbox.t3.text_positions is ", text_positions, "; [start] + text + [stop] need 3");
}

HParams HParams::from_checkpoint(const WeightStore &store, const std::string &prefix, Variant variant) {
    if (store.find(prefix + "tfmr.h.0.attn.c_attn.weight"))
        fail("T3 checkpoint under '", prefix, "' has a GPT-2 backbone (Turbo/Nano); only the Llama T3 is supported");
    HParams hp = for_variant(variant);
    const CheckpointShapes shapes(store, prefix);
    shapes.read("text_emb.weight", 2, 0, hp.text_vocab);
    shapes.read("text_emb.weight", 2, 1, hp.hidden);
    hp.head_dim = hp.hidden / hp.n_heads; // the head count is not in any shape
    shapes.read("speech_emb.weight", 2, 0, hp.speech_vocab);
    shapes.read("text_pos_emb.emb.weight", 2, 0, hp.text_positions);
    shapes.read("speech_pos_emb.emb.weight", 2, 0, hp.speech_positions);
    shapes.read("tfmr.layers.0.mlp.gate_proj.weight", 2, 0, hp.ffn);
    shapes.read("cond_enc.spkr_enc.weight", 2, 1, hp.speaker_embed);
    shapes.read("cond_enc.perceiver.pre_attention_query", 3, 1, hp.perceiver_queries);
    shapes.count("tfmr.layers.", ".input_layernorm.weight", hp.n_layers);
    return shapes.validated(hp);
}

std::vector<float> llama3_rope_freq_factors(const HParams &hp) {
    const double pi = 3.14159265358979323846;
    const double low_freq_wavelen = hp.rope_original_max_positions / double(hp.rope_low_freq_factor);
    const double high_freq_wavelen = hp.rope_original_max_positions / double(hp.rope_high_freq_factor);
    std::vector<float> factors(size_t(hp.head_dim / 2));
    for (size_t i = 0; i < factors.size(); ++i) {
        const double freq = std::pow(double(hp.rope_theta), -2.0 * double(i) / hp.head_dim);
        const double wavelen = 2 * pi / freq;
        double scaled = freq;
        if (wavelen > low_freq_wavelen) {
            scaled = freq / hp.rope_factor;
        } else if (wavelen >= high_freq_wavelen) { // between the two: interpolate smoothly
            const double smooth = (hp.rope_original_max_positions / wavelen - hp.rope_low_freq_factor) /
                                  (hp.rope_high_freq_factor - hp.rope_low_freq_factor);
            scaled = (1 - smooth) * freq / hp.rope_factor + smooth * freq;
        }
        factors[i] = float(freq / scaled); // ggml divides the angle by the factor
    }
    return factors;
}

} // namespace chatterbox::t3
