#pragma once
// Audio encoded in memory, for answers that are bytes rather than files (the server): 16-bit PCM,
// a WAV header that can precede a stream of unknown length, and whole files through libsndfile.

#include <cstddef>
#include <string>
#include <vector>

namespace chatterbox::audio {

// Appends samples as signed 16-bit little-endian PCM, clipped to [-1, 1] and scaled by 32767 as
// libsndfile's normalised float conversion does.
void append_pcm16(std::string &out, const float *samples, size_t n);

// The 44-byte header of a mono 16-bit PCM WAV file holding `samples` samples. For a stream whose
// length is not known yet, pass kUnknownLength: the size fields then hold 0xFFFFFFFF, which
// players (ffmpeg, browsers) read as "until the stream ends".
constexpr size_t kUnknownLength = size_t(-1);
std::string wav_header(int sample_rate, size_t samples);

enum class FileFormat { wav, flac };

// A whole mono file: WAV is the header + PCM16 above, FLAC is libsndfile's 16-bit encoder. Throws
// Error for an empty or non-finite signal or a failed encode.
std::string encode_audio(const std::vector<float> &samples, int sample_rate, FileFormat format);

} // namespace chatterbox::audio
