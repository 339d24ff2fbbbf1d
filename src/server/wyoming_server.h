#pragma once
// chatterbox-server's Wyoming side (Rhasspy / Home Assistant's protocol for local voice services):
// a TCP listener beside (or instead of) the HTTP one, on the same PipelineModel, SessionPool (sessions and
// queue limit), voice library, limits, metrics and drain (server.h). Framing: wyoming_event.h.
//
//   describe                      -> info: one TTS program "chatterbox" (supports_synthesize_streaming),
//                                    its voices: "default" (the model's built-in voice) and the library's
//   synthesize {text, voice{name}} -> audio-start, audio-chunk ... (as the audio is made), audio-stop
//   synthesize-start {voice}, synthesize-chunk {text} ..., synthesize-stop
//                                 -> each sentence is spoken as soon as the sentence splitter sees it
//                                    complete (the next one has begun): audio-start once, audio-chunks,
//                                    then at synthesize-stop the rest, audio-stop, synthesize-stopped.
//                                    A synthesize inside such a stream (Home Assistant sends the whole
//                                    text again for older servers) is ignored.
//   ping {text}                   -> pong {text}
//
// Audio is 16-bit little-endian mono PCM at the model's rate (24 kHz); an audio-chunk carries at most
// 0.1 s of it. Chatterbox's synthesis parameters (seed, temperature, max_new_tokens ...; the HTTP
// API's names and ranges) may ride along as an object "chatterbox" in synthesize's or
// synthesize-start's data; clients that know nothing of it get the model's defaults.
//
// Errors are an error event {text, code}, and then the connection is closed: malformed or
// oversized events (no resynchronising on a broken stream), a refused or failed synthesis (an
// unknown voice, text over the limit, all sessions busy, draining, past the deadline). An event of
// an unknown type is answered with an error and the connection goes on. At most max_connections
// are open; the next one gets an error event (too_many_connections) and is closed. A connection
// idle for idle_seconds is closed (idle_timeout).
//
// Operations, as for an HTTP request (request_watch.h): a synthesize, or a streamed synthesis from
// synthesize-start to synthesize-stopped, is one request in flight under the server's deadline; a
// client that hangs up cancels it within one poll and one graph node (one that half-closes its side
// counts as gone, as on the HTTP side); a drain (SIGTERM) lets it finish and answers new ones with
// error server_draining.

#include "server/server.h"
#include "server/wyoming_event.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

namespace chatterbox::server {

struct WyomingOptions {
    std::string host = "127.0.0.1";
    int port = 10200; // 0: any free port (bind() says which)
    int max_connections = 16;
    double idle_seconds = 300;         // no event for this long closes the connection
    double write_timeout_seconds = 30; // a client that takes no audio for this long is gone
};

// "HOST:PORT" (IPv4 address or name; [IPv6]:PORT) into options.host/port; throws InvalidArgument.
void parse_wyoming_address(const std::string &address, WyomingOptions &options);

// The limits of one connection's events, from the server's text limit: a synthesize's data (or a
// header carrying it inline) holds up to max_input_chars characters, each at most 12 bytes of JSON
// (a \uXXXX surrogate pair), plus room for the voice and parameters. No event we take has a payload.
wyoming::EventLimits wyoming_event_limits(const RequestLimits &limits);

class WyomingServer {
  public:
    // Serves with what `server` holds; `server` must outlive this (its HTTP side need not run).
    // Throws InvalidArgument for options out of range.
    WyomingServer(Server &server, const WyomingOptions &options);
    ~WyomingServer(); // stop()
    WyomingServer(const WyomingServer &) = delete;
    WyomingServer &operator=(const WyomingServer &) = delete;

    // Binds host:port and returns the port; throws Error when the address cannot be bound.
    int bind();
    // Accepts connections until stop(), on the calling thread (one thread per connection); bind() first.
    void run();
    // From any thread: stops accepting, closes every connection (a synthesis in flight is
    // cancelled by its hang-up) and waits until their threads are done. Drain first (Server::drain)
    // to let syntheses finish.
    void stop();

    int connections() const;

  private:
    void serve_connection(int socket);
    void refuse_connection(int socket);
    void closed(int socket, bool served);

    Server &server_;
    const WyomingOptions options_;
    const wyoming::EventLimits limits_;
    int listener_ = -1;
    int wake_[2] = {-1, -1}; // a pipe: stop() writes, run()'s poll wakes
    std::atomic<bool> stopping_{false};
    mutable std::mutex mutex_;
    std::condition_variable all_closed_;
    std::vector<int> open_;          // sockets of the connections being served or turned away
    int serving_ = 0, refusing_ = 0; // how many of each
};

} // namespace chatterbox::server
