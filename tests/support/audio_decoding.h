#pragma once
// Decoders for the bytes of src/audio/audio_encoding.h, independent of the encoders: libsndfile's
// readers (wav, flac, ogg/opus, mp3 through mpg123) from memory, and libavcodec's decoders over its
// stream parser (aac in ADTS, and mp3 a second way).

#include "audio/audio_encoding.h"

#include <string>
#include <vector>

namespace chatterbox::test {

struct DecodedAudio {
    std::vector<float> samples; // the first channel
    int sample_rate = 0;
    int channels = 0;
};

// libsndfile, format told by content. Fails the test (and returns nothing) when it cannot open them.
DecodedAudio decode_with_libsndfile(const std::string &bytes);
enum class AvCodec { aac, mp3 };
DecodedAudio decode_with_libavcodec(const std::string &bytes, AvCodec codec);
// The format's decoder of the two above; pcm is s16le at `pcm_rate`.
DecodedAudio decode_audio(const std::string &bytes, audio::AudioFormat format, int pcm_rate = 24000);

// What a codec may add to the length of what it encoded: encoder delay and padding to whole frames
// (0 for the lossless formats and for Ogg Opus, whose pre-skip and end trim make it exact).
size_t codec_padding(audio::AudioFormat format);

} // namespace chatterbox::test
