#include "request_inputs.h"

namespace chatterbox::bench {

RequestInputs request_inputs(const t3::HParams &hp, int prompt_tokens, int text_tokens, std::mt19937_64 &rng) {
    RequestInputs in;
    std::uniform_real_distribution<float> value(-0.1f, 0.1f);
    for (int i = 0; i < hp.speaker_embed; ++i) in.voice.speaker_emb.push_back(value(rng));
    std::uniform_int_distribution<int32_t> speech_unit(0, hp.speech_token_limit - 1);
    for (int i = 0; i < prompt_tokens; ++i) in.voice.prompt_tokens.push_back(speech_unit(rng));
    std::uniform_int_distribution<int32_t> text_id(1, hp.start_text_token - 1);
    in.text.push_back(hp.start_text_token);
    for (int i = 0; i < text_tokens; ++i) in.text.push_back(text_id(rng));
    in.text.push_back(hp.stop_text_token);
    return in;
}

} // namespace chatterbox::bench
