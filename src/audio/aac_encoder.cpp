#include "audio/aac_encoder.h"

#include "audio/libav_handles.h"
#include "core/error.h"

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/log.h>
}

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace chatterbox::audio {
namespace {

constexpr int kBitRate = 64000;

using libav::error_text;

// ISO/IEC 14496-3 table 1.18: the rates an ADTS header can name, by index.
int adts_rate_index(int sample_rate) {
    static constexpr std::array<int, 13> kRates = {96000, 88200, 64000, 48000, 44100, 32000, 24000,
                                                   22050, 16000, 12000, 11025, 8000,  7350};
    const auto it = std::find(kRates.begin(), kRates.end(), sample_rate);
    if (it == kRates.end()) fail("encode_audio: AAC (ADTS) cannot carry ", sample_rate, " Hz");
    return int(it - kRates.begin());
}

// The 7-byte ADTS header (ISO/IEC 14496-3 1.A.2, no CRC) of one AAC-LC mono frame of payload bytes.
std::string adts_header(int rate_index, size_t payload) {
    constexpr int kProfileLc = 1; // audio object type 2 (AAC LC) minus one
    constexpr int kMono = 1;      // channel configuration
    const size_t length = 7 + payload;
    if (length >= (1u << 13)) fail("encode_audio: an AAC frame of ", payload, " bytes does not fit ADTS");
    const unsigned char header[7] = {
        0xFF,
        0xF1, // sync word, MPEG-4, layer 0, no CRC
        static_cast<unsigned char>((kProfileLc << 6) | (rate_index << 2) | (kMono >> 2)),
        static_cast<unsigned char>(((kMono & 3) << 6) | (length >> 11)),
        static_cast<unsigned char>((length >> 3) & 0xFF),
        static_cast<unsigned char>(((length & 7) << 5) | 0x1F), // buffer fullness 0x7FF: variable rate
        0xFC,                                                   // ... and one raw data block
    };
    return std::string(reinterpret_cast<const char *>(header), sizeof header);
}

class AacEncoder : public StreamEncoder {
  public:
    explicit AacEncoder(int sample_rate) : rate_index_(adts_rate_index(sample_rate)) {
        const AVCodec *codec = avcodec_find_encoder_by_name("aac");
        if (!codec) fail("encode_audio: this libavcodec has no native AAC encoder");
        context_.reset(avcodec_alloc_context3(codec));
        frame_.reset(av_frame_alloc());
        packet_.reset(av_packet_alloc());
        if (!context_ || !frame_ || !packet_) fail("encode_audio: out of memory for the AAC encoder");
        context_->sample_rate = sample_rate;
        context_->sample_fmt = AV_SAMPLE_FMT_FLTP;
        context_->bit_rate = kBitRate;
        context_->profile = FF_PROFILE_AAC_LOW;
        av_channel_layout_default(&context_->ch_layout, 1);
        if (const int status = avcodec_open2(context_.get(), codec, nullptr); status < 0)
            fail("encode_audio: libavcodec cannot start AAC at ", sample_rate, " Hz: ", error_text(status));
        frame_size_ = size_t(context_->frame_size);
        small_last_frame_ = (codec->capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME) != 0;
    }

  protected:
    std::string encode_checked(const float *samples, size_t n) override {
        // The encoder takes whole frames: the rest waits for the next call.
        pending_.insert(pending_.end(), samples, samples + n);
        std::string out;
        size_t used = 0;
        for (; pending_.size() - used >= frame_size_; used += frame_size_)
            send(pending_.data() + used, frame_size_, out);
        pending_.erase(pending_.begin(), pending_.begin() + std::ptrdiff_t(used));
        return out;
    }
    std::string finish_stream() override {
        std::string out;
        if (!pending_.empty()) {
            if (!small_last_frame_) pending_.resize(frame_size_, 0.0f);
            send(pending_.data(), pending_.size(), out);
        }
        send(nullptr, 0, out); // drains the encoder's delay
        return out;
    }

  private:
    void send(const float *samples, size_t n, std::string &out) {
        int status = 0;
        if (samples) {
            frame_->nb_samples = int(n);
            frame_->format = context_->sample_fmt;
            frame_->sample_rate = context_->sample_rate;
            av_channel_layout_copy(&frame_->ch_layout, &context_->ch_layout);
            if ((status = av_frame_get_buffer(frame_.get(), 0)) < 0)
                fail("encode_audio: no AAC frame buffer: ", error_text(status));
            std::memcpy(frame_->data[0], samples, n * sizeof(float)); // mono planar: one plane
            frame_->pts = pts_;
            pts_ += int64_t(n);
        }
        status = avcodec_send_frame(context_.get(), samples ? frame_.get() : nullptr);
        av_frame_unref(frame_.get());
        if (status < 0) fail("encode_audio: AAC encoding failed: ", error_text(status));
        while ((status = avcodec_receive_packet(context_.get(), packet_.get())) >= 0) {
            out += adts_header(rate_index_, size_t(packet_->size));
            out.append(reinterpret_cast<const char *>(packet_->data), size_t(packet_->size));
            av_packet_unref(packet_.get());
        }
        if (status != AVERROR(EAGAIN) && status != AVERROR_EOF)
            fail("encode_audio: AAC encoding failed: ", error_text(status));
    }

    int rate_index_;
    libav::ContextPtr context_;
    libav::FramePtr frame_;
    libav::PacketPtr packet_;
    size_t frame_size_ = 0;
    bool small_last_frame_ = false;
    int64_t pts_ = 0;
    std::vector<float> pending_; // samples short of a whole frame
};

} // namespace

std::unique_ptr<StreamEncoder> make_aac_encoder(int sample_rate) {
    // libavcodec logs each encoder's statistics at close (info level); failures reach us as codes.
    static const bool quiet = (av_log_set_level(AV_LOG_ERROR), true);
    (void)quiet;
    return std::make_unique<AacEncoder>(sample_rate);
}

} // namespace chatterbox::audio
