#include "audio/audio_file.h"

#include "core/error.h"

#include <fcntl.h>
#include <sndfile.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <system_error>

namespace chatterbox::audio {
namespace {

struct SndfileCloser {
    void operator()(SNDFILE *file) const { sf_close(file); }
};
using SndfilePtr = std::unique_ptr<SNDFILE, SndfileCloser>;

std::string lowercase_extension(const std::string &path) {
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext;
}

// The libsndfile format code for an output path, from its extension.
int output_format(const std::string &path, const WriteOptions &options) {
    const std::string ext = lowercase_extension(path);
    if (ext == ".wav")
        return SF_FORMAT_WAV | (options.wav_encoding == WavEncoding::float32 ? SF_FORMAT_FLOAT : SF_FORMAT_PCM_16);
    if (ext == ".flac") return SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
    if (ext == ".ogg") return SF_FORMAT_OGG | SF_FORMAT_VORBIS;
    if (ext == ".mp3") return SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III;
    fail("write_audio: cannot choose a format for '", path, "': extension '", ext,
         "' is not one of .wav, .flac, .ogg, .mp3");
}

// Averages interleaved channels in float32, in channel order, as numpy's mean over the channel axis does.
void append_mono(const std::vector<float> &interleaved, sf_count_t frames, int channels, std::vector<float> &out) {
    if (channels == 1) {
        out.insert(out.end(), interleaved.begin(), interleaved.begin() + frames);
        return;
    }
    for (sf_count_t f = 0; f < frames; ++f) {
        const float *frame = interleaved.data() + f * channels;
        float sum = 0.0f;
        for (int c = 0; c < channels; ++c) sum += frame[c];
        float mean = sum / float(channels);
        if (!std::isfinite(mean)) { // finite samples near FLT_MAX overflow a float sum (found by fuzz_audio)
            double wide = 0.0;
            for (int c = 0; c < channels; ++c) wide += frame[c];
            mean = float(wide / channels);
        }
        out.push_back(mean);
    }
}

} // namespace

AudioBuffer read_audio(const std::string &path, const ReadOptions &options) {
    if (!(options.max_seconds > 0)) fail("read_audio: max_seconds must be positive, got ", options.max_seconds);
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status)) fail("read_audio: cannot open '", path, "': no such file");
    if (!std::filesystem::is_regular_file(status)) fail("read_audio: '", path, "' is not a regular file");
    if (std::filesystem::file_size(path, ec) == 0 && !ec) fail("read_audio: '", path, "' is empty (0 bytes)");

    SF_INFO info{};
    SndfilePtr file(sf_open(path.c_str(), SFM_READ, &info));
    if (!file)
        fail("read_audio: '", path,
             "' is not an audio file libsndfile can decode (wav, flac, ogg, opus, mp3 ...): ", sf_strerror(nullptr));
    if (info.samplerate <= 0 || info.channels <= 0)
        fail("read_audio: '", path, "' reports ", info.samplerate, " Hz and ", info.channels, " channels");
    if (info.samplerate > options.max_sample_rate)
        fail("read_audio: '", path, "' has a sample rate of ", info.samplerate, " Hz; the limit is ",
             options.max_sample_rate, " Hz");

    const double max_frames = options.max_seconds * info.samplerate;
    if (info.frames > max_frames && info.frames != SF_COUNT_MAX)
        fail("read_audio: '", path, "' is ", double(info.frames) / info.samplerate, " s long; the limit is ",
             options.max_seconds, " s");

    AudioBuffer audio;
    audio.sample_rate = info.samplerate;
    const int channels = info.channels;
    // ~1 MB per block, or the whole file when libsndfile says it is shorter (the loop reads on
    // until the decoder stops either way, so a wrong count only costs more blocks).
    sf_count_t block_frames = std::max<sf_count_t>(1, (1 << 18) / channels);
    if (info.frames > 0 && info.frames < block_frames) block_frames = info.frames;
    std::vector<float> block(static_cast<size_t>(block_frames) * channels);
    for (;;) {
        const sf_count_t got = sf_readf_float(file.get(), block.data(), block_frames);
        if (got <= 0) break;
        for (size_t i = 0; i < size_t(got) * channels; ++i)
            if (!std::isfinite(block[i]))
                fail("read_audio: '", path, "' holds a non-finite sample (NaN or infinity) at frame ",
                     audio.samples.size() + i / channels);
        append_mono(block, got, channels, audio.samples);
        if (double(audio.samples.size()) > max_frames)
            fail("read_audio: '", path, "' is longer than the limit of ", options.max_seconds, " s");
    }
    if (sf_error(file.get()) != SF_ERR_NO_ERROR)
        fail("read_audio: decoding '", path, "' failed after ", audio.samples.size(),
             " frames: ", sf_strerror(file.get()));
    if (audio.samples.empty()) fail("read_audio: '", path, "' holds no audio samples (0 frames)");
    return audio;
}

struct AudioFileWriter::File {
    SndfilePtr handle;
};

namespace {

// A name beside `path` that no other writer in this or another process uses at the same time.
std::string partial_name(const std::string &path) {
    static std::atomic<unsigned> counter{0};
    return concat(path, ".partial-", ::getpid(), "-", counter++);
}

} // namespace

AudioFileWriter::AudioFileWriter(std::string path, int sample_rate, const WriteOptions &options)
    : path_(std::move(path)), file_(std::make_unique<File>()) {
    if (sample_rate <= 0) fail("write_audio: '", path_, "': sample rate must be positive, got ", sample_rate);
    SF_INFO info{};
    info.samplerate = sample_rate;
    info.channels = 1;
    info.format = output_format(path_, options);
    // libsndfile leaks its LAME encoder when it refuses an MPEG sample rate, so check the rate first.
    constexpr int mpeg_rates[] = {8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000};
    if ((info.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_MPEG &&
        std::find(std::begin(mpeg_rates), std::end(mpeg_rates), sample_rate) == std::end(mpeg_rates))
        fail("write_audio: '", path_,
             "': MP3 only supports sample rates of 8000, 11025, 12000, 16000, 22050, 24000, "
             "32000, 44100 and 48000 Hz, got ",
             sample_rate);
    if (!sf_format_check(&info))
        fail("write_audio: '", path_, "': libsndfile cannot encode this format at ", sample_rate, " Hz");

    partial_ = partial_name(path_);
    const int fd = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) fail("write_audio: cannot create '", path_, "' (", partial_, "): ", std::strerror(errno));
    file_->handle.reset(sf_open_fd(fd, SFM_WRITE, &info, SF_TRUE));
    if (!file_->handle) {
        ::close(fd);
        std::remove(partial_.c_str());
        fail("write_audio: cannot create '", path_, "': ", sf_strerror(nullptr));
    }
    // Integer encoders wrap out-of-range floats unless clipping is switched on.
    sf_command(file_->handle.get(), SFC_SET_CLIPPING, nullptr, SF_TRUE);
}

AudioFileWriter::~AudioFileWriter() {
    if (!file_->handle) return; // finished
    file_->handle.reset();
    std::remove(partial_.c_str());
}

void AudioFileWriter::write(const float *samples, size_t n) {
    if (!file_->handle) fail("write_audio: '", path_, "' is already finished");
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(samples[i]))
            fail("write_audio: '", path_, "': sample ", samples_ + i, " is not finite (", samples[i], ")");
    const sf_count_t written = sf_writef_float(file_->handle.get(), samples, sf_count_t(n));
    if (written != sf_count_t(n))
        fail("write_audio: writing '", path_, "' stopped after ", samples_ + size_t(std::max<sf_count_t>(written, 0)),
             " frames: ", sf_strerror(file_->handle.get()));
    samples_ += n;
}

void AudioFileWriter::finish() {
    if (!file_->handle) fail("write_audio: '", path_, "' is already finished");
    if (samples_ == 0) fail("write_audio: '", path_, "': no samples to write");
    SNDFILE *raw = file_->handle.release();
    if (sf_close(raw) != 0) {
        std::remove(partial_.c_str());
        fail("write_audio: finishing '", path_, "' failed");
    }
    std::error_code ec;
    std::filesystem::rename(partial_, path_, ec);
    if (ec) {
        std::remove(partial_.c_str());
        fail("write_audio: cannot put the audio at '", path_, "': ", ec.message());
    }
}

void write_audio(const std::string &path, const std::vector<float> &samples, int sample_rate,
                 const WriteOptions &options) {
    if (samples.empty()) fail("write_audio: '", path, "': no samples to write");
    AudioFileWriter writer(path, sample_rate, options);
    writer.write(samples.data(), samples.size());
    writer.finish();
}

} // namespace chatterbox::audio
