#pragma once
// Owning pointers for libavcodec's objects, freed however their user ends (a constructor that
// throws included), and libav's error codes as text. For src/audio/aac_encoder.cpp and the tests'
// decoders.

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
}

#include <memory>
#include <string>

namespace chatterbox::audio::libav {

struct FreeContext {
    void operator()(AVCodecContext *context) const { avcodec_free_context(&context); }
};
struct FreeFrame {
    void operator()(AVFrame *frame) const { av_frame_free(&frame); }
};
struct FreePacket {
    void operator()(AVPacket *packet) const { av_packet_free(&packet); }
};
using ContextPtr = std::unique_ptr<AVCodecContext, FreeContext>;
using FramePtr = std::unique_ptr<AVFrame, FreeFrame>;
using PacketPtr = std::unique_ptr<AVPacket, FreePacket>;

inline std::string error_text(int code) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(code, text, sizeof text);
    return text;
}

} // namespace chatterbox::audio::libav
