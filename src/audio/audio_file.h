#pragma once
// Audio files through libsndfile: read any format it decodes (wav, flac, ogg/vorbis, opus, mp3) as
// mono float32, and write wav/flac/ogg/mp3 chosen by the file extension.

#include <string>
#include <memory>
#include <vector>

namespace chatterbox::audio {

// A mono signal and its sample rate: what read_audio decodes, or audio handed over in memory.
struct AudioBuffer {
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
AudioBuffer read_audio(const std::string &path, const ReadOptions &options = {});

enum class WavEncoding { pcm16, float32 };

struct WriteOptions {
    WavEncoding wav_encoding = WavEncoding::pcm16; // used for .wav only
};

// Mono audio written to a file as it comes; the container and codec follow the extension
// (case-insensitive): .wav (PCM16 or float32), .flac (PCM16), .ogg (Vorbis), .mp3 (MPEG layer III).
// Samples beyond [-1, 1] are clipped by integer encoders. The bytes go to a new file beside `path`
// (path.partial-PID-N) that finish() completes (the container's header) and renames over `path`, so
// `path` holds either what it held before or the whole new audio: a failed, interrupted or abandoned
// write (the destructor) removes the partial file and leaves `path` alone.
class AudioFileWriter {
  public:
    // Throws Error for an unknown extension, a sample rate the codec refuses or a file that cannot be
    // created.
    AudioFileWriter(std::string path, int sample_rate, const WriteOptions &options = {});
    ~AudioFileWriter();
    AudioFileWriter(const AudioFileWriter &) = delete;
    AudioFileWriter &operator=(const AudioFileWriter &) = delete;

    // Throws Error for a non-finite sample (nothing of the call is written) or a failed write.
    void write(const float *samples, size_t n);
    size_t samples() const { return samples_; }
    // Completes the file and puts it at `path`; throws Error when no sample was written or the file
    // cannot be completed. Once only.
    void finish();

  private:
    struct File;
    std::string path_, partial_;
    std::unique_ptr<File> file_;
    size_t samples_ = 0;
};

// The whole signal through an AudioFileWriter. Throws Error as it does, also for an empty signal.
void write_audio(const std::string &path, const std::vector<float> &samples, int sample_rate,
                 const WriteOptions &options = {});

} // namespace chatterbox::audio
