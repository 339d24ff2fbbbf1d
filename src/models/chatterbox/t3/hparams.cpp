#include "models/chatterbox/t3/hparams.h"

#include "core/error.h"
#include "core/weight_store.h"

#include <cmath>

namespace chatterbox::t3 {

HParams HParams::english() { return HParams{}; }

HParams HParams::from_store(const WeightStore &store, const std::string &prefix) {
    if (store.find(prefix + "tfmr.h.0.attn.c_attn.weight"))
        fail("T3 checkpoint under '", prefix, "' has a GPT-2 backbone (Turbo/Nano); only the Llama T3 is supported");
    const TensorView *text_emb = store.find(prefix + "text_emb.weight");
    if (!text_emb) fail("T3 checkpoint under '", prefix, "' has no tensor text_emb.weight");
    if (text_emb->shape.size() != 2)
        fail("T3 text_emb.weight: expected 2 dimensions, got ", shape_str(text_emb->shape));
    HParams hp = english();
    hp.text_vocab = int(text_emb->shape[0]);
    return hp;
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
