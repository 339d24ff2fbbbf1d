#include "models/chatterbox/t3/hparams.h"

#include "core/error.h"
#include "core/weight_store.h"

#include <cmath>

namespace chatterbox::t3 {

HParams HParams::english() { return HParams{}; }

HParams HParams::gpt2(int n_layers, int hidden, int n_heads) {
    HParams hp;
    hp.backbone = int(Backbone::gpt2);
    hp.n_layers = n_layers;
    hp.hidden = hidden;
    hp.n_heads = n_heads;
    hp.head_dim = hidden / n_heads;
    hp.ffn = 4 * hidden; // GPT-2's n_inner default
    hp.positions = 8196; // n_positions
    hp.text_vocab = 50276;
    hp.speech_vocab = 6563;
    hp.text_positions = 0;
    hp.speech_positions = 0;
    hp.framed_text = 0;
    hp.bos_tokens = 1;
    hp.perceiver_queries = 0;
    hp.emotion_token = 0;
    hp.speech_cond_prompt_len = 375;
    hp.guards = GuardHParams{}; // no alignment analyzer: the official code has none for GPT-2
    hp.sampler = SamplerRecipe::tts_turbo();
    return hp;
}

const HparamTable<HParams> &HParams::fields() {
    using R = FieldRule;
    static const HparamTable<HParams> table = {
        {"chatterbox.t3.backbone", &HParams::backbone, R::non_negative},
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
        {"chatterbox.t3.positions", &HParams::positions, R::non_negative},
        {"chatterbox.t3.text_vocab", &HParams::text_vocab, R::positive},
        {"chatterbox.t3.speech_vocab", &HParams::speech_vocab, R::positive},
        {"chatterbox.t3.start_text_token", &HParams::start_text_token, R::non_negative},
        {"chatterbox.t3.stop_text_token", &HParams::stop_text_token, R::non_negative},
        {"chatterbox.t3.start_speech_token", &HParams::start_speech_token, R::non_negative},
        {"chatterbox.t3.stop_speech_token", &HParams::stop_speech_token, R::non_negative},
        {"chatterbox.t3.speech_token_limit", &HParams::speech_token_limit, R::positive},
        {"chatterbox.t3.text_positions", &HParams::text_positions, R::non_negative},
        {"chatterbox.t3.speech_positions", &HParams::speech_positions, R::non_negative},
        {"chatterbox.t3.framed_text", &HParams::framed_text, R::non_negative},
        {"chatterbox.t3.bos_tokens", &HParams::bos_tokens, R::positive},
        {"chatterbox.t3.speaker_embed", &HParams::speaker_embed, R::positive},
        {"chatterbox.t3.perceiver_queries", &HParams::perceiver_queries, R::non_negative},
        {"chatterbox.t3.perceiver_heads", &HParams::perceiver_heads, R::positive},
        {"chatterbox.t3.layer_norm_eps", &HParams::layer_norm_eps, R::positive},
        {"chatterbox.t3.emotion_token", &HParams::emotion_token, R::non_negative},
        {"chatterbox.t3.speech_cond_prompt_len", &HParams::speech_cond_prompt_len, R::positive},
    };
    return table;
}

void HParams::validate() const {
    validate_fields(fields(), *this);
    if (backbone != int(Backbone::llama) && backbone != int(Backbone::gpt2))
        fail("chatterbox.t3.backbone is ", backbone, "; known: ", int(Backbone::llama), " (Llama), ",
             int(Backbone::gpt2), " (GPT-2)");
    for (const auto &[key, flag] : {std::pair{"framed_text", framed_text}, {"emotion_token", emotion_token}})
        if (flag != 0 && flag != 1) fail("chatterbox.t3.", key, " is ", flag, "; it must be 0 or 1");
    if (bos_tokens > 2) fail("chatterbox.t3.bos_tokens is ", bos_tokens, "; T3 feeds 1 or 2");
    if ((text_positions == 0) != (speech_positions == 0))
        fail("chatterbox.t3.text_positions (", text_positions, ") and chatterbox.t3.speech_positions (",
             speech_positions, ") must both be 0 (no learned position tables) or both positive");
    if ((backbone == int(Backbone::gpt2)) != (positions > 0))
        fail("chatterbox.t3.positions is ", positions, " with chatterbox.t3.backbone ", backbone,
             ": a GPT-2 backbone needs its position table, Llama has none");
    if (!has_learned_positions() && positions == 0)
        fail("chatterbox.t3: without learned T3 position tables the backbone must place positions itself (GPT-2)");
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
    if (max_framed_text() < 2 + framed_text)
        fail("chatterbox.t3: at most ", max_framed_text(), " text tokens fit; [start] + text + [stop] need 3");
}

namespace {

// The sizes a GPT-2 T3 checkpoint declares (the head count is in no shape: the variant's stays).
HParams gpt2_from_checkpoint(const CheckpointShapes &shapes, HParams hp) {
    shapes.read("text_emb.weight", 2, 0, hp.text_vocab);
    shapes.read("text_emb.weight", 2, 1, hp.hidden);
    hp.head_dim = hp.hidden / hp.n_heads;
    shapes.read("speech_emb.weight", 2, 0, hp.speech_vocab);
    shapes.read("tfmr.wpe.weight", 2, 0, hp.positions);
    shapes.read("tfmr.h.0.mlp.c_fc.weight", 2, 1, hp.ffn); // Conv1D: (in, out)
    shapes.read("cond_enc.spkr_enc.weight", 2, 1, hp.speaker_embed);
    shapes.count("tfmr.h.", ".ln_1.weight", hp.n_layers);
    return shapes.validated(hp);
}

} // namespace

HParams HParams::from_checkpoint(const WeightStore &store, const std::string &prefix, const HParams &published) {
    HParams hp = published;
    const bool gpt2_checkpoint = store.find(prefix + "tfmr.h.0.attn.c_attn.weight") != nullptr;
    if (gpt2_checkpoint != (hp.backbone_kind() == Backbone::gpt2))
        fail("T3 checkpoint under '", prefix, "' has a ", gpt2_checkpoint ? "GPT-2" : "Llama", " backbone, but the ",
             variant_name(hp.variant), " T3 is ", gpt2_checkpoint ? "Llama" : "GPT-2");
    const CheckpointShapes shapes(store, prefix);
    if (gpt2_checkpoint) return gpt2_from_checkpoint(shapes, hp);
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
