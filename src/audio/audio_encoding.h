#pragma once
// Audio encoded in memory, for answers that are bytes rather than files (the server), in the
// formats OpenAI's speech API names: mp3, opus (Ogg), aac (ADTS), flac, wav, pcm (s16le, no header).
//
// Every format has a StreamEncoder that turns samples into bytes as they come: each call returns
// the bytes complete so far, to be sent at once, and no byte once returned is ever changed (a
// stream cannot seek back), so the concatenated returns of a stream decode as they are. A whole
// file (EncodedOutput::file) comes from the same encoders, except that the container may complete
// its header at the end (FLAC's STREAMINFO length and MD5, WAV's sizes).
//
//   pcm, wav: written here (a WAV stream has "unknown" sizes, 0xFFFFFFFF, which players read to the
//             end of the stream);
//   flac, mp3, opus: libsndfile through its virtual I/O into a buffer drained after each write;
//             mp3 is constant bitrate (64 kbit/s) so a stream needs no Xing header for its length,
//             opus is encoded at the input rate (24 kHz is one of Opus's own rates; decoders
//             resample to 48 kHz);
//   aac: libavcodec's native AAC-LC encoder, each packet framed as ADTS (aac_encoder.cpp).

#include <cstddef>
#include <memory>
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

enum class AudioFormat { mp3, opus, aac, flac, wav, pcm };

struct AudioFormatInfo {
    AudioFormat format;
    const char *name;         // OpenAI's response_format value: "mp3"
    const char *content_type; // as OpenAI answers it: "audio/mpeg"
};

// Every format, in OpenAI's order.
const std::vector<AudioFormatInfo> &audio_formats();
const AudioFormatInfo &audio_format_info(AudioFormat format);
// nullptr for a name no format has.
const AudioFormatInfo *find_audio_format(const std::string &name);
// "mp3, opus, aac, flac, wav or pcm", for messages.
std::string audio_format_names();

enum class EncodedOutput {
    stream, // bytes leave as they are made; headers hold "unknown length" where the container has one
    file,   // the bytes come at finish(), with the container's header completed
};

// One mono stream of one format. Not thread-safe; one encoder per answer.
class StreamEncoder {
  public:
    virtual ~StreamEncoder() = default;
    // Encodes more samples (finite, nominally in [-1, 1]; beyond is clipped where the codec is
    // integer) and returns the bytes complete so far, possibly none while the codec fills a frame.
    // Throws Error for a non-finite sample or a failed encode.
    std::string encode(const float *samples, size_t n);
    // Ends the stream: the codec's last frames and trailer. Call once; encode() no more after it.
    std::string finish();

  protected:
    virtual std::string encode_checked(const float *samples, size_t n) = 0;
    virtual std::string finish_stream() = 0;

  private:
    bool finished_ = false;
};

// Throws Error when the codec refuses the sample rate or the library lacks the codec.
std::unique_ptr<StreamEncoder> make_stream_encoder(AudioFormat format, int sample_rate, EncodedOutput output);

// A whole mono file (make_stream_encoder with EncodedOutput::file). No samples give the
// container's empty form (WAV: its header; Ogg Opus: its header pages; the others: nothing).
// Throws Error for a non-finite signal or a failed encode.
std::string encode_audio(const std::vector<float> &samples, int sample_rate, AudioFormat format);

} // namespace chatterbox::audio
