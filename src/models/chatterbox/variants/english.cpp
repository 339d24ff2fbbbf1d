// English (tts.py, ResembleAI/chatterbox): the Llama_520M T3 with CFG, the standard flow.
#include "models/chatterbox/variant_spec.h"

namespace chatterbox {

const VariantSpec &english_variant() {
    static const VariantSpec spec = [] {
        VariantSpec s{Variant::english,
                      {{Variant::english,
                        "ResembleAI/chatterbox",
                        {"ve.safetensors", "t3_cfg.safetensors", "s3gen.safetensors"},
                        {"tokenizer.json"}}},
                      text::english_punctuation,
                      TextTokenizer::english,
                      t3::HParams::english(),
                      s3gen::FlowHParams::standard(),
                      ReferencePolicy{}};
        s.t3.variant = Variant::english;
        return s;
    }();
    return spec;
}

} // namespace chatterbox
