#pragma once
// The voice library's routes and voice conversion, all multipart/form-data uploads but the reads:
//
//   GET    /v1/audio/voices          {"object": "list", "data": [voice, ...]}
//   POST   /v1/audio/voices          name + file (a recording) [+ overwrite=true] -> 201 voice
//   GET    /v1/audio/voices/{name}   voice;  DELETE: {"name", "object": "voice", "deleted": true}
//   POST   /v1/audio/voice-conversion  file + (voice NAME | voice_file RECORDING)
//                                      [+ response_format, seed] -> audio
//
// A recording is decoded by the audio reader (wav, flac, ogg, mp3 ...); one that cannot be used is a
// 400 naming its field. Building a voice and converting take a session from the pool (503 when busy).

#include "server/server.h"
#include "server/voice_library.h"

namespace httplib {
class Server;
}

namespace chatterbox::server {

void add_voice_routes(httplib::Server &http, const PipelineModel &engine, SessionPool &pool, VoiceLibrary &voices,
                      const ServerOptions &options);

// The voice `name` means in a speech request, with the request's exaggeration: the library's voice
// of that name, else the model's built-in voice for "default" and OpenAI's voice names. Throws
// ApiError 400 naming `voice` for any other name.
VoiceConditionals resolve_voice(const PipelineModel &engine, const VoiceLibrary &voices, const std::string &name,
                                float exaggeration);

} // namespace chatterbox::server
