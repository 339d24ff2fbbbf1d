#pragma once
// One Wyoming connection's events, read and answered on the calling thread (wyoming_server.h says
// what each event does). Syntheses run on this thread too: while a sentence is spoken, the text
// that follows waits in the socket's receive buffer.

#include "server/server.h"
#include "server/wyoming_event.h"

namespace chatterbox::server {

struct WyomingContext {
    const PipelineModel &engine;
    SessionPool &pool;
    const VoiceLibrary &voices;
    const ServerOptions &options; // limits, retry time
    RequestWatch &watch;
    Metrics &metrics;
    wyoming::EventLimits limits;
};

// Serves the connected `socket` until the peer closes, an error event ends it, it idles past its
// receive timeout, or the socket is shut down (WyomingServer::stop). Does not close the socket.
void serve_wyoming_connection(const WyomingContext &context, int socket);

// Writes all of `bytes`; false when the peer is gone or the send timeout passed.
bool send_all(int socket, const std::string &bytes);

// The info event's data: the TTS program and its voices.
nlohmann::json wyoming_info(const PipelineModel &engine, const VoiceLibrary &voices);

} // namespace chatterbox::server
