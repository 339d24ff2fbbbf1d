#include "audio/audio_encoding.h"

#include "core/error.h"

#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace chatterbox::audio {
namespace {

void append_le(std::string &out, uint32_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(char((value >> (8 * i)) & 0xFF));
}

void check_signal(const std::vector<float> &samples) {
    if (samples.empty()) fail("encode_audio: no samples");
    for (float s : samples)
        if (!std::isfinite(s)) fail("encode_audio: the signal holds a non-finite sample");
}

// libsndfile's virtual I/O over a growing string, so a file is encoded without touching the disk.
struct MemoryFile {
    std::string bytes;
    sf_count_t position = 0;

    static sf_count_t length(void *self) { return sf_count_t(static_cast<MemoryFile *>(self)->bytes.size()); }
    static sf_count_t seek(sf_count_t offset, int whence, void *self) {
        auto *file = static_cast<MemoryFile *>(self);
        const sf_count_t base = whence == SEEK_CUR ? file->position : whence == SEEK_END ? length(self) : 0;
        if (base + offset < 0) return -1;
        file->position = base + offset;
        return file->position;
    }
    static sf_count_t read(void *ptr, sf_count_t count, void *self) {
        auto *file = static_cast<MemoryFile *>(self);
        const sf_count_t available = std::max<sf_count_t>(0, length(self) - file->position);
        const sf_count_t n = std::min(count, available);
        std::memcpy(ptr, file->bytes.data() + file->position, size_t(n));
        file->position += n;
        return n;
    }
    static sf_count_t write(const void *ptr, sf_count_t count, void *self) {
        auto *file = static_cast<MemoryFile *>(self);
        const size_t end = size_t(file->position + count);
        if (end > file->bytes.size()) file->bytes.resize(end);
        std::memcpy(file->bytes.data() + file->position, ptr, size_t(count));
        file->position += count;
        return count;
    }
    static sf_count_t tell(void *self) { return static_cast<MemoryFile *>(self)->position; }
};

std::string encode_flac(const std::vector<float> &samples, int sample_rate) {
    SF_VIRTUAL_IO io{MemoryFile::length, MemoryFile::seek, MemoryFile::read, MemoryFile::write, MemoryFile::tell};
    MemoryFile file;
    SF_INFO info{};
    info.samplerate = sample_rate;
    info.channels = 1;
    info.format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
    SNDFILE *sf = sf_open_virtual(&io, SFM_WRITE, &info, &file);
    if (!sf) fail("encode_audio: libsndfile cannot start a FLAC stream: ", sf_strerror(nullptr));
    // Integer encoders wrap out-of-range floats unless clipping is switched on.
    sf_command(sf, SFC_SET_CLIPPING, nullptr, SF_TRUE);
    const sf_count_t written = sf_writef_float(sf, samples.data(), sf_count_t(samples.size()));
    const std::string error = written == sf_count_t(samples.size()) ? "" : sf_strerror(sf);
    if (sf_close(sf) != 0 || !error.empty()) fail("encode_audio: FLAC encoding failed: ", error);
    return std::move(file.bytes);
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

std::string encode_audio(const std::vector<float> &samples, int sample_rate, FileFormat format) {
    check_signal(samples);
    if (format == FileFormat::flac) return encode_flac(samples, sample_rate);
    std::string out = wav_header(sample_rate, samples.size());
    append_pcm16(out, samples.data(), samples.size());
    return out;
}

} // namespace chatterbox::audio
