#include "server/speech_handler.h"

#include "audio/audio_encoding.h"
#include "core/error.h"
#include "server/api_error.h"
#include "server/voice_routes.h"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <cstdio>

namespace chatterbox::server {
namespace {

using nlohmann::json;

std::string base64(const std::string &bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3), '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char *>(out.data()),
                                  reinterpret_cast<const unsigned char *>(bytes.data()), int(bytes.size()));
    out.resize(size_t(n));
    return out;
}

std::string sse_event(const json &event) { return "data: " + event.dump() + "\n\n"; }

// The SSE "speech.audio.done" usage: speech tokens, and per text piece why its speech ended.
json usage(const SynthesisResult &result) {
    json ends = json::array();
    for (t3::PieceEnd end : result.piece_ends) ends.push_back(t3::piece_end_name(end));
    return {{"speech_tokens", result.speech_tokens},
            {"pieces", result.pieces},
            {"piece_ends", ends},
            {"pieces_at_length_bound", result.pieces_at_length_bound()}};
}

// The same for a whole answer, as a header: "eos,length_bound".
std::string piece_ends_header(const SynthesisResult &result) {
    std::string out;
    for (size_t i = 0; i < result.piece_ends.size(); ++i)
        out += concat(i ? "," : "", t3::piece_end_name(result.piece_ends[i]));
    return out;
}

// One streamed answer: runs the synthesis inside httplib's content provider, so every chunk goes
// out as soon as it is final, and a chunk the client no longer takes cancels the synthesis.
struct StreamJob {
    std::shared_ptr<PipelineSession> session;
    SpeechRequest request;
    VoiceConditionals voice;
    SynthesisOptions options; // the request's parameters; run() adds streaming and the chunk writer
    std::unique_ptr<WatchedRequest> watched;
    SpeechOperations operations;

    // httplib's provider contract: true with sink.done() when complete, false to drop the connection.
    bool run(httplib::DataSink &sink) {
        const bool sse = request.stream == StreamFormat::sse;
        // Each chunk's bytes go out as soon as the encoder yields them (none while it fills a frame).
        const auto send = [&](const std::string &bytes) {
            if (bytes.empty()) return true;
            return write(sink, sse ? sse_event({{"type", "speech.audio.delta"}, {"audio", base64(bytes)}}) : bytes);
        };
        bool complete = true;
        try {
            const std::unique_ptr<audio::StreamEncoder> encoder = audio::make_stream_encoder(
                request.format, session->engine().sample_rate(), audio::EncodedOutput::stream);
            options.stream = true;
            options.on_chunk = [&](const float *samples, size_t n) {
                return send(encoder->encode(samples, n)); // false: the client is gone, which cancels
            };
            const SynthesisResult result = run_watched(operations, *watched, [&] {
                SynthesisResult result = session->synthesize(request.input, voice, options);
                if (!send(encoder->finish())) throw Cancelled("the client is gone");
                return result;
            });
            if (sse) write(sink, sse_event({{"type", "speech.audio.done"}, {"usage", usage(result)}}));
        } catch (const ApiError &e) { // cancelled: past the deadline, drained, or the client is gone
            log_stream_end(e);
            complete = sse && write(sink, sse_event({{"type", "error"}, {"error", e.fields()}}));
        } catch (const std::exception &e) {
            // The status line is sent already: SSE says what went wrong as an event; an audio stream
            // can only end early.
            const ApiError error(500, e.what(), "", "server_error");
            log_stream_end(error);
            complete = sse && write(sink, sse_event({{"type", "error"}, {"error", error.fields()}}));
        }
        session.reset(); // free for the next request before the connection winds down
        watched.reset();
        if (complete) sink.done();
        return complete;
    }

    static bool write(httplib::DataSink &sink, const std::string &bytes) {
        return sink.write(bytes.data(), bytes.size());
    }

    // A stream that ends early has sent its 200 already: the log is where the operator sees why.
    static void log_stream_end(const ApiError &error) {
        std::fprintf(stderr, "chatterbox-server: a streamed synthesis ended early (%d): %s\n", error.status,
                     error.what());
    }
};

} // namespace

void answer_speech(const PipelineModel &engine, SessionPool &pool, const VoiceLibrary &voices,
                   const ServerOptions &options, const SpeechOperations &operations,
                   const httplib::Request &http_request, httplib::Response &response) {
    SpeechRequest request = parse_speech_request(http_request.body, options.limits);
    SynthesisOptions synthesis;
    synthesis.params = request.params;
    try {
        engine.text().check_language(request.params.language);
    } catch (const InvalidArgument &e) {
        throw ApiError(400, e.what(), "language");
    }
    try {
        check_synthesis(engine, request.input, synthesis);
    } catch (const InvalidArgument &e) {
        throw ApiError(400, e.what());
    }
    VoiceConditionals voice = resolve_voice(engine, voices, request.voice, request.params.exaggeration);
    std::unique_ptr<WatchedRequest> watched =
        watch_request(operations, http_request, options.retry_after_seconds, response);
    synthesis.cancel = watched->cancel_flag();
    // Whole answers are made in the same windows as streamed ones, so a request gives the same audio
    // streamed or not (the offline reference computation stays the CLI's and the C API's default).
    synthesis.stream = true;

    std::shared_ptr<PipelineSession> session = pool.acquire();
    if (!session) {
        response.set_header("Retry-After", std::to_string(options.retry_after_seconds));
        throw ApiError(503, concat("all ", pool.size(), " sessions are busy and the queue is full; retry later"), "",
                       "server_error", "server_busy");
    }

    if (request.stream == StreamFormat::none) {
        const SynthesisResult result =
            run_watched(operations, *watched, [&] { return session->synthesize(request.input, voice, synthesis); });
        session.reset();
        response.set_header("X-Chatterbox-Piece-Ends", piece_ends_header(result));
        response.set_content(audio::encode_audio(result.wave, result.sample_rate, request.format),
                             content_type(request.format));
        return;
    }
    const char *type = request.stream == StreamFormat::sse ? "text/event-stream" : content_type(request.format);
    auto job = std::make_shared<StreamJob>(StreamJob{std::move(session), std::move(request), std::move(voice),
                                                     std::move(synthesis), std::move(watched), operations});
    response.set_chunked_content_provider(type, [job](size_t, httplib::DataSink &sink) { return job->run(sink); });
}

} // namespace chatterbox::server
