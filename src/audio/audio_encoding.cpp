#include "audio/audio_encoding.h"

#include "audio/aac_encoder.h"
#include "core/error.h"

#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

namespace chatterbox::audio {
namespace {

void append_le(std::string &out, uint32_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(char((value >> (8 * i)) & 0xFF));
}

// s16le without a header.
class PcmEncoder : public StreamEncoder {
  protected:
    std::string encode_checked(const float *samples, size_t n) override {
        std::string out;
        append_pcm16(out, samples, n);
        return out;
    }
    std::string finish_stream() override { return ""; }
};

// The header of unknown length first when streaming; a whole file waits for its length.
class WavEncoder : public StreamEncoder {
  public:
    WavEncoder(int sample_rate, EncodedOutput output) : sample_rate_(sample_rate), output_(output) {}

  protected:
    std::string encode_checked(const float *samples, size_t n) override {
        if (output_ == EncodedOutput::file) {
            append_pcm16(data_, samples, n);
            return "";
        }
        std::string out = take_stream_header();
        append_pcm16(out, samples, n);
        return out;
    }
    std::string finish_stream() override {
        if (output_ == EncodedOutput::stream) return take_stream_header();
        return wav_header(sample_rate_, data_.size() / 2) + data_;
    }

  private:
    std::string take_stream_header() {
        return std::exchange(header_sent_, true) ? "" : wav_header(sample_rate_, kUnknownLength);
    }

    int sample_rate_;
    EncodedOutput output_;
    bool header_sent_ = false;
    std::string data_; // EncodedOutput::file: the PCM until finish
};

// libsndfile's virtual I/O over a buffer whose front is taken away (drained) as it is sent. The
// drained bytes are out of reach: a write libsndfile makes to them (a header it completes on
// close, as it would in a file) is dropped, as on a pipe, and the stream keeps what was first
// written there ("length unknown" for FLAC). Seeks only move the position, so libsndfile and
// libFLAC carry on after such a write instead of writing the header at the end.
struct DrainedBuffer {
    std::string pending;    // the bytes from offset `drained` on
    sf_count_t drained = 0; // bytes taken so far
    sf_count_t position = 0;

    std::string take() {
        drained += sf_count_t(pending.size());
        return std::exchange(pending, {});
    }

    static DrainedBuffer &of(void *self) { return *static_cast<DrainedBuffer *>(self); }
    static sf_count_t length(void *self) { return of(self).drained + sf_count_t(of(self).pending.size()); }
    static sf_count_t seek(sf_count_t offset, int whence, void *self) {
        DrainedBuffer &buffer = of(self);
        const sf_count_t base = whence == SEEK_CUR ? buffer.position : whence == SEEK_END ? length(self) : 0;
        if (base + offset < 0) return -1;
        return buffer.position = base + offset;
    }
    static sf_count_t read(void *ptr, sf_count_t count, void *self) {
        DrainedBuffer &buffer = of(self);
        const sf_count_t at = buffer.position - buffer.drained;
        if (at < 0) return 0; // sent already: gone
        const sf_count_t n = std::clamp<sf_count_t>(sf_count_t(buffer.pending.size()) - at, 0, count);
        std::memcpy(ptr, buffer.pending.data() + at, size_t(n));
        buffer.position += n;
        return n;
    }
    static sf_count_t write(const void *ptr, sf_count_t count, void *self) {
        DrainedBuffer &buffer = of(self);
        const sf_count_t gone = std::clamp<sf_count_t>(buffer.drained - buffer.position, 0, count);
        if (gone < count) {
            const size_t at = size_t(buffer.position + gone - buffer.drained), kept = size_t(count - gone);
            if (at + kept > buffer.pending.size()) buffer.pending.resize(at + kept);
            std::memcpy(buffer.pending.data() + at, static_cast<const char *>(ptr) + gone, kept);
        }
        buffer.position += count;
        return count;
    }
    static sf_count_t tell(void *self) { return of(self).position; }
};

struct SndfileCodec {
    const char *name;
    int format;                       // SF_FORMAT_* container | codec
    void (*configure)(SNDFILE *file); // encoder settings before the first write; nullptr: libsndfile's
};

// CBR, so that a stream without a Xing header still tells its length from its size. libsndfile maps
// the compression level c to (160 - 152 c) kbit/s below 32 kHz (MPEG-2); this c gives 64 kbit/s.
void configure_mp3(SNDFILE *file) {
    int mode = SF_BITRATE_MODE_CONSTANT;
    sf_command(file, SFC_SET_BITRATE_MODE, &mode, sizeof mode);
    double compression = (160.0 - 64.0) / 152.0 - 1e-9; // libsndfile truncates the bitrate
    if (sf_command(file, SFC_GET_BITRATE_MODE, nullptr, 0) != SF_BITRATE_MODE_CONSTANT ||
        !sf_command(file, SFC_SET_COMPRESSION_LEVEL, &compression, sizeof compression))
        fail("encode_audio: libsndfile refused the MP3 encoder's settings: ", sf_strerror(file));
}

const SndfileCodec kFlac{"FLAC", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, nullptr};
const SndfileCodec kMp3{"MP3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, configure_mp3};
const SndfileCodec kOpus{"Ogg Opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, nullptr};

class SndfileEncoder : public StreamEncoder {
  public:
    SndfileEncoder(const SndfileCodec &codec, int sample_rate, EncodedOutput output) : codec_(codec), output_(output) {
        SF_INFO info{};
        info.samplerate = sample_rate;
        info.channels = 1;
        info.format = codec.format;
        if (!sf_format_check(&info))
            fail("encode_audio: ", sf_version_string(), " cannot write ", codec.name, " at ", sample_rate, " Hz");
        SF_VIRTUAL_IO io{DrainedBuffer::length, DrainedBuffer::seek, DrainedBuffer::read, DrainedBuffer::write,
                         DrainedBuffer::tell};
        file_ = sf_open_virtual(&io, SFM_WRITE, &info, &buffer_);
        if (!file_) fail("encode_audio: libsndfile cannot start a ", codec.name, " stream: ", sf_strerror(nullptr));
        // Integer encoders wrap out-of-range floats unless clipping is switched on.
        sf_command(file_, SFC_SET_CLIPPING, nullptr, SF_TRUE);
        try {
            if (codec.configure) codec.configure(file_);
        } catch (...) {
            sf_close(file_);
            throw;
        }
    }
    ~SndfileEncoder() override {
        if (file_) sf_close(file_);
    }

  protected:
    std::string encode_checked(const float *samples, size_t n) override {
        if (sf_writef_float(file_, samples, sf_count_t(n)) != sf_count_t(n))
            fail("encode_audio: ", codec_.name, " encoding failed: ", sf_strerror(file_));
        return output_ == EncodedOutput::stream ? buffer_.take() : "";
    }
    std::string finish_stream() override {
        const int status = sf_close(std::exchange(file_, nullptr));
        if (status != 0) fail("encode_audio: ", codec_.name, " encoding failed: ", sf_error_number(status));
        return buffer_.take();
    }

  private:
    const SndfileCodec &codec_;
    EncodedOutput output_;
    DrainedBuffer buffer_; // before file_: libsndfile writes into it until sf_close
    SNDFILE *file_ = nullptr;
};

struct FormatEntry {
    AudioFormatInfo info;
    std::unique_ptr<StreamEncoder> (*make)(int sample_rate, EncodedOutput output);
};

template <const SndfileCodec &codec>
std::unique_ptr<StreamEncoder> make_sndfile_encoder(int sample_rate, EncodedOutput output) {
    return std::make_unique<SndfileEncoder>(codec, sample_rate, output);
}
std::unique_ptr<StreamEncoder> make_wav_encoder(int sample_rate, EncodedOutput output) {
    return std::make_unique<WavEncoder>(sample_rate, output);
}
std::unique_ptr<StreamEncoder> make_pcm_encoder(int, EncodedOutput) { return std::make_unique<PcmEncoder>(); }
// ADTS has no header to complete: a file is the stream.
std::unique_ptr<StreamEncoder> make_adts_encoder(int sample_rate, EncodedOutput) {
    return make_aac_encoder(sample_rate);
}

const FormatEntry kFormats[] = {
    {{AudioFormat::mp3, "mp3", "audio/mpeg"}, make_sndfile_encoder<kMp3>},
    {{AudioFormat::opus, "opus", "audio/opus"}, make_sndfile_encoder<kOpus>},
    {{AudioFormat::aac, "aac", "audio/aac"}, make_adts_encoder},
    {{AudioFormat::flac, "flac", "audio/flac"}, make_sndfile_encoder<kFlac>},
    {{AudioFormat::wav, "wav", "audio/wav"}, make_wav_encoder},
    {{AudioFormat::pcm, "pcm", "audio/pcm"}, make_pcm_encoder},
};

const FormatEntry &entry(AudioFormat format) {
    for (const FormatEntry &e : kFormats)
        if (e.info.format == format) return e;
    fail("encode_audio: unknown audio format ", int(format));
}

} // namespace

void append_pcm16(std::string &out, const float *samples, size_t n) {
    out.reserve(out.size() + 2 * n);
    for (size_t i = 0; i < n; ++i) {
        const float clipped = std::clamp(samples[i], -1.0f, 1.0f);
        append_le(out, uint32_t(uint16_t(int16_t(std::lrint(clipped * 32767.0f)))), 2);
    }
}

std::string wav_header(int sample_rate, size_t samples) {
    constexpr uint32_t kBytesPerSample = 2, kHeaderRest = 36; // RIFF size counts from "WAVE"
    const bool unknown = samples == kUnknownLength || samples * kBytesPerSample > 0xFFFFFFFFu - kHeaderRest;
    const uint32_t data_bytes = unknown ? 0xFFFFFFFFu : uint32_t(samples * kBytesPerSample);
    std::string out = "RIFF";
    append_le(out, unknown ? 0xFFFFFFFFu : kHeaderRest + data_bytes, 4);
    out += "WAVEfmt ";
    append_le(out, 16, 4);                                      // fmt chunk size
    append_le(out, 1, 2);                                       // PCM
    append_le(out, 1, 2);                                       // mono
    append_le(out, uint32_t(sample_rate), 4);                   // sample rate
    append_le(out, uint32_t(sample_rate) * kBytesPerSample, 4); // byte rate
    append_le(out, kBytesPerSample, 2);                         // block align
    append_le(out, 16, 2);                                      // bits per sample
    out += "data";
    append_le(out, data_bytes, 4);
    return out;
}

const std::vector<AudioFormatInfo> &audio_formats() {
    static const std::vector<AudioFormatInfo> formats = [] {
        std::vector<AudioFormatInfo> out;
        for (const FormatEntry &e : kFormats) out.push_back(e.info);
        return out;
    }();
    return formats;
}

const AudioFormatInfo &audio_format_info(AudioFormat format) { return entry(format).info; }

const AudioFormatInfo *find_audio_format(const std::string &name) {
    for (const FormatEntry &e : kFormats)
        if (name == e.info.name) return &e.info;
    return nullptr;
}

std::string audio_format_names() {
    std::string out;
    const size_t n = std::size(kFormats);
    for (size_t i = 0; i < n; ++i) out += concat(i == 0 ? "" : i + 1 == n ? " or " : ", ", kFormats[i].info.name);
    return out;
}

std::string StreamEncoder::encode(const float *samples, size_t n) {
    if (finished_) fail("encode_audio: samples after the end of the stream");
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(samples[i])) fail("encode_audio: the signal holds a non-finite sample");
    return n == 0 ? "" : encode_checked(samples, n);
}

std::string StreamEncoder::finish() {
    if (finished_) fail("encode_audio: the stream is finished already");
    finished_ = true;
    return finish_stream();
}

std::unique_ptr<StreamEncoder> make_stream_encoder(AudioFormat format, int sample_rate, EncodedOutput output) {
    if (sample_rate <= 0) fail("encode_audio: sample rate ", sample_rate, " Hz");
    return entry(format).make(sample_rate, output);
}

std::string encode_audio(const std::vector<float> &samples, int sample_rate, AudioFormat format) {
    const std::unique_ptr<StreamEncoder> encoder = make_stream_encoder(format, sample_rate, EncodedOutput::file);
    std::string out = encoder->encode(samples.data(), samples.size());
    return out + encoder->finish();
}

} // namespace chatterbox::audio
