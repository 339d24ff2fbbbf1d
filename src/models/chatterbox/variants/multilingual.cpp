// Multilingual v2 / v3 (mtl_tts.py, ResembleAI/chatterbox): English's Llama T3 and flow with a
// 2454-token multilingual text vocabulary, torch pickles for ve and s3gen, v2 the default T3.
#include "models/chatterbox/variant_spec.h"

namespace chatterbox {

const VariantSpec &multilingual_variant() {
    static const VariantSpec spec = [] {
        const auto folder = [](const char *t3_file, const char *t3_model) {
            return OfficialFolder{Variant::multilingual,
                                  "ResembleAI/chatterbox",
                                  {"ve.pt", t3_file, "s3gen.pt"},
                                  {"grapheme_mtl_merged_expanded_v1.json"},
                                  {"Cangjie5_TC.json"},
                                  "chatterbox-multilingual",
                                  t3_model};
        };
        VariantSpec s{Variant::multilingual,
                      {folder("t3_mtl23ls_v2.safetensors", "v2"), folder("t3_mtl23ls_v3.safetensors", "v3")},
                      text::multilingual_punctuation,
                      TextTokenizer::multilingual,
                      t3::HParams::english(),
                      s3gen::FlowHParams::standard(),
                      ReferencePolicy{}};
        s.t3.variant = Variant::multilingual;
        s.t3.text_vocab = 2454;
        // Text tokens are sub-words and whole CJK characters (~6 speech tokens each): a higher rate.
        s.t3.guards.speech_per_text_token = 10.0f;
        s.t3.guards.covered_per_text_token = 2.0f;
        s.flow.trim_last_token = true; // mtl_tts.py drops the flow's last speech token
        return s;
    }();
    return spec;
}

} // namespace chatterbox
