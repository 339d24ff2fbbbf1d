// Nano (tts_turbo.py with nano, ResembleAI/chatterbox-nano): Turbo with a GPT-2 small T3.
#include "models/chatterbox/variant_spec.h"

namespace chatterbox {

const VariantSpec &nano_variant() {
    static const VariantSpec spec = gpt2_variant(Variant::nano, "ResembleAI/chatterbox-nano", "t3_nano_v1.safetensors",
                                                 t3::HParams::gpt2(12, 768, 12)); // GPT2_small
    return spec;
}

} // namespace chatterbox
