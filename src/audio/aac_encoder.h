#pragma once
// AAC-LC in an ADTS stream (what OpenAI's speech API answers for "aac"), from libavcodec's native
// encoder: mono, 64 kbit/s. ADTS frames carry their own header, so a stream needs nothing at the
// start or the end and the bytes of each packet leave as the encoder yields it. Like every AAC
// encoder it primes with one frame (1024 samples) that decoders play as silence before the audio.

#include "audio/audio_encoding.h"

#include <memory>

namespace chatterbox::audio {

// Throws Error for a sample rate ADTS cannot name or libavcodec refuses.
std::unique_ptr<StreamEncoder> make_aac_encoder(int sample_rate);

} // namespace chatterbox::audio
