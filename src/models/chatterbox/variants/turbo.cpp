// Turbo (tts_turbo.py, ResembleAI/chatterbox-turbo): a GPT-2 medium T3 without CFG, the 2-step
// mean flow, GPT-2's tokenizer files, references longer than 5 s normalised to -27 LUFS.
#include "models/chatterbox/variant_spec.h"

namespace chatterbox {

VariantSpec gpt2_variant(Variant variant, const char *repo, const char *t3_file, t3::HParams t3) {
    VariantSpec s{
        variant,
        {{variant,
          repo,
          {"ve.safetensors", t3_file, "s3gen_meanflow.safetensors"},
          {"vocab.json", "merges.txt", "added_tokens.json", "special_tokens_map.json", "tokenizer_config.json"}}},
        text::turbo_punctuation,
        TextTokenizer::plain,
        std::move(t3),
        s3gen::FlowHParams::mean_flow_standard(),
        ReferencePolicy{}};
    s.t3.variant = variant;
    // GPT-2 BPE tokens of ~4 characters each.
    s.t3.guards.speech_per_text_token = 12.0f;
    s.t3.guards.covered_per_text_token = 3.0f;
    s.reference.min_seconds = 5.0; // tts_turbo.py asserts "longer than 5 s"
    s.reference.min_is_exclusive = true;
    s.reference.loudness_lufs = -27.0;
    return s;
}

const VariantSpec &turbo_variant() {
    static const VariantSpec spec =
        gpt2_variant(Variant::turbo, "ResembleAI/chatterbox-turbo", "t3_turbo_v1.safetensors",
                     t3::HParams::gpt2(24, 1024, 16)); // GPT2_medium
    return spec;
}

} // namespace chatterbox
