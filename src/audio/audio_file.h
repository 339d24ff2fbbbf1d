#pragma once
// Audio files through libsndfile: read any format it decodes (wav, flac, ogg/vorbis, opus, mp3) as
// mono float32, and write wav/flac/ogg/mp3 chosen by the file extension.

#include <string>
#include <vector>

namespace chatterbox::audio {

struct Audio {
    std::vector<float> samples; // mono, nominally in [-1, 1]
    int sample_rate = 0;

    double seconds() const { return sample_rate > 0 ? double(samples.size()) / sample_rate : 0.0; }
};

struct ReadOptions {
    double max_seconds = 600.0;   // longer files are rejected (a reference voice is seconds long)
    int max_sample_rate = 384000; // higher rates are rejected before decoding (studio masters go to 384 kHz)
};

// Decodes the file and averages its channels, as librosa.load(path, sr=None) does: integer PCM
// maps to floats exactly as soundfile does (int16 / 32768). Throws Error when the file cannot be
// opened, is not audio libsndfile understands, has no samples, has a sample rate above
// max_sample_rate, is longer than max_seconds or holds non-finite samples.
Audio read_audio(const std::string &path, const ReadOptions &options = {});

enum class WavEncoding { pcm16, float32 };

struct WriteOptions {
    WavEncoding wav_encoding = WavEncoding::pcm16; // used for .wav only
};

// Writes mono audio; the container and codec follow the extension (case-insensitive): .wav (PCM16
// or float32), .flac (PCM16), .ogg (Vorbis), .mp3 (MPEG layer III). Samples beyond [-1, 1] are
// clipped by integer encoders. Throws Error for an unknown extension, an empty or non-finite
// signal, a sample rate the codec refuses, or a failed write.
void write_audio(const std::string &path, const std::vector<float> &samples, int sample_rate,
                 const WriteOptions &options = {});

} // namespace chatterbox::audio
