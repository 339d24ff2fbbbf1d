#pragma once
// POST /v1/audio/speech: a checked SpeechRequest run on a pooled session, answered as a whole file,
// as audio bytes sent while they are made, or as server-sent events.

#include "server/server.h"
#include "server/watched_synthesis.h"

namespace chatterbox::server {

class VoiceLibrary;

// Throws ApiError for a request refused before synthesis (bad body, unknown voice, busy server,
// draining).
void answer_speech(const PipelineModel &engine, SessionPool &pool, const VoiceLibrary &voices,
                   const ServerOptions &options, const SpeechOperations &operations,
                   const httplib::Request &http_request, httplib::Response &response);

} // namespace chatterbox::server
