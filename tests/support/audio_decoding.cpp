#include "support/audio_decoding.h"

#include "audio/libav_handles.h"

#include <gtest/gtest.h>
#include <sndfile.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/channel_layout.h>
}

#include <algorithm>
#include <cstring>
#include <memory>

namespace chatterbox::test {
namespace {

struct MemoryReader {
    const std::string &bytes;
    sf_count_t position = 0;

    static MemoryReader &of(void *self) { return *static_cast<MemoryReader *>(self); }
    static sf_count_t length(void *self) { return sf_count_t(of(self).bytes.size()); }
    static sf_count_t seek(sf_count_t offset, int whence, void *self) {
        MemoryReader &r = of(self);
        const sf_count_t base = whence == SEEK_CUR ? r.position : whence == SEEK_END ? length(self) : 0;
        if (base + offset < 0 || base + offset > length(self)) return -1;
        return r.position = base + offset;
    }
    static sf_count_t read(void *ptr, sf_count_t count, void *self) {
        MemoryReader &r = of(self);
        const sf_count_t n = std::clamp<sf_count_t>(length(self) - r.position, 0, count);
        std::memcpy(ptr, r.bytes.data() + r.position, size_t(n));
        r.position += n;
        return n;
    }
    static sf_count_t write(const void *, sf_count_t, void *) { return 0; }
    static sf_count_t tell(void *self) { return of(self).position; }
};

// One sample of an AVFrame's first channel as a float, for the sample formats decoders give.
float sample_at(const AVFrame &frame, int i) {
    const int channels = frame.ch_layout.nb_channels;
    switch (frame.format) {
    case AV_SAMPLE_FMT_FLTP:
        return reinterpret_cast<const float *>(frame.data[0])[i];
    case AV_SAMPLE_FMT_FLT:
        return reinterpret_cast<const float *>(frame.data[0])[i * channels];
    case AV_SAMPLE_FMT_S16P:
        return reinterpret_cast<const int16_t *>(frame.data[0])[i] / 32768.0f;
    case AV_SAMPLE_FMT_S16:
        return reinterpret_cast<const int16_t *>(frame.data[0])[i * channels] / 32768.0f;
    default:
        ADD_FAILURE() << "a decoder's sample format " << frame.format;
        return 0;
    }
}

struct FreeParser {
    void operator()(AVCodecParserContext *p) const { av_parser_close(p); }
};

} // namespace

DecodedAudio decode_with_libsndfile(const std::string &bytes) {
    MemoryReader reader{bytes};
    SF_VIRTUAL_IO io{MemoryReader::length, MemoryReader::seek, MemoryReader::read, MemoryReader::write,
                     MemoryReader::tell};
    SF_INFO info{};
    SNDFILE *file = sf_open_virtual(&io, SFM_READ, &info, &reader);
    DecodedAudio out;
    if (!file) {
        ADD_FAILURE() << "libsndfile cannot read the bytes: " << sf_strerror(nullptr);
        return out;
    }
    out.sample_rate = info.samplerate;
    out.channels = info.channels;
    std::vector<float> block(4096 * size_t(info.channels));
    for (sf_count_t n; (n = sf_readf_float(file, block.data(), 4096)) > 0;)
        for (sf_count_t i = 0; i < n; ++i) out.samples.push_back(block[size_t(i * info.channels)]);
    sf_close(file);
    return out;
}

DecodedAudio decode_with_libavcodec(const std::string &bytes, AvCodec which) {
    const AVCodecID id = which == AvCodec::aac ? AV_CODEC_ID_AAC : AV_CODEC_ID_MP3;
    DecodedAudio out;
    const AVCodec *codec = avcodec_find_decoder(id);
    std::unique_ptr<AVCodecParserContext, FreeParser> parser(av_parser_init(id));
    audio::libav::ContextPtr context(avcodec_alloc_context3(codec));
    audio::libav::FramePtr frame(av_frame_alloc());
    audio::libav::PacketPtr packet(av_packet_alloc());
    if (!codec || !parser || !context || !frame || !packet || avcodec_open2(context.get(), codec, nullptr) < 0) {
        ADD_FAILURE() << "libavcodec has no decoder for codec " << int(id);
        return out;
    }
    const auto drain = [&] {
        while (avcodec_receive_frame(context.get(), frame.get()) >= 0) {
            out.sample_rate = frame->sample_rate;
            out.channels = frame->ch_layout.nb_channels;
            for (int i = 0; i < frame->nb_samples; ++i) out.samples.push_back(sample_at(*frame, i));
        }
    };
    // The parser needs AV_INPUT_BUFFER_PADDING_SIZE zero bytes after the data.
    std::vector<uint8_t> data(bytes.begin(), bytes.end());
    data.resize(bytes.size() + AV_INPUT_BUFFER_PADDING_SIZE, 0);
    const uint8_t *at = data.data();
    int left = int(bytes.size());
    while (true) {
        const int used = av_parser_parse2(parser.get(), context.get(), &packet->data, &packet->size, at, left,
                                          AV_NOPTS_VALUE, AV_NOPTS_VALUE, 0);
        if (used < 0) {
            ADD_FAILURE() << "the parser refused the stream";
            break;
        }
        at += used;
        left -= used;
        if (packet->size > 0) {
            if (avcodec_send_packet(context.get(), packet.get()) < 0) ADD_FAILURE() << "a packet does not decode";
            drain();
        }
        if (left == 0 && packet->size == 0) break; // the parser has given its last packet
    }
    avcodec_send_packet(context.get(), nullptr);
    drain();
    return out;
}

size_t codec_padding(audio::AudioFormat format) {
    switch (format) {
    case audio::AudioFormat::mp3:
        return 3 * 576 + 1152; // LAME's delay and padding, MPEG-2 granules of 576
    case audio::AudioFormat::aac:
        return 3 * 1024; // the priming frame and padding to whole frames of 1024
    default:
        return 0;
    }
}

DecodedAudio decode_audio(const std::string &bytes, audio::AudioFormat format, int pcm_rate) {
    switch (format) {
    case audio::AudioFormat::aac:
        return decode_with_libavcodec(bytes, AvCodec::aac);
    case audio::AudioFormat::pcm: {
        DecodedAudio out{std::vector<float>(bytes.size() / 2), pcm_rate, 1};
        for (size_t i = 0; i < out.samples.size(); ++i) {
            int16_t value;
            std::memcpy(&value, bytes.data() + 2 * i, 2);
            out.samples[i] = value / 32768.0f;
        }
        return out;
    }
    default:
        return decode_with_libsndfile(bytes);
    }
}

} // namespace chatterbox::test
