#pragma once
// POST /v1/audio/speech: the JSON body, field for field as OpenAI documents it, plus Chatterbox's
// own knobs (the shared parameter table, synthesis_params.h), checked into a SpeechRequest before
// any session is taken. Every refusal is an ApiError naming the field.

#include "audio/audio_encoding.h"
#include "models/chatterbox/synthesis_params.h"

#include <cstddef>
#include <string>

namespace chatterbox::server {

using ResponseFormat = audio::AudioFormat; // every format streams as well (audio/audio_encoding.h)
enum class StreamFormat {
    none,  // the whole file at once, computed offline (the reference computation)
    audio, // the audio bytes sent chunked as they are made
    sse,   // server-sent events: speech.audio.delta (base64 audio), then speech.audio.done
};

struct RequestLimits {
    size_t max_input_chars = 4096; // OpenAI's limit on `input`, in Unicode code points
};

struct SpeechRequest {
    std::string model; // accepted as given; the server has one model
    std::string input;
    std::string voice;
    ResponseFormat format = ResponseFormat::wav;
    StreamFormat stream = StreamFormat::none;
    SynthesisParams params;
};

// Unicode code points of UTF-8 text (what max_input_chars counts).
size_t code_points(const std::string &utf8);

// The names of the model's built-in voice: "default" and OpenAI's voice names.
bool is_builtin_voice_name(const std::string &voice);

// Parses and checks the body. Throws ApiError: 400 for malformed JSON, a missing or mistyped field,
// a value out of range (speed included: the table's), an unknown field, what is not supported; 413 for an
// input over the limit. The voice is checked when resolved (voice_routes.h resolve_voice).
SpeechRequest parse_speech_request(const std::string &body, const RequestLimits &limits);

const char *content_type(ResponseFormat format);
// "" is wav; throws ApiError 400 naming response_format (also for voice conversion's field).
ResponseFormat parse_response_format(const std::string &name);

} // namespace chatterbox::server
