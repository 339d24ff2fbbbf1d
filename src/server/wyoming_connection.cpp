#include "server/wyoming_connection.h"

#include "audio/audio_encoding.h"
#include "core/error.h"
#include "server/api_error.h"
#include "server/voice_routes.h"
#include "server/watched_synthesis.h"
#include "text/languages.h"
#include "text/sentence_splitter.h"

#include <sys/socket.h>

#include <cerrno>
#include <cmath>
#include <optional>

namespace chatterbox::server {
namespace {

using nlohmann::json;
using wyoming::encode_event;
using wyoming::Event;

constexpr size_t kBytesPerSample = 2; // s16le mono
// At most 0.1 s of 24 kHz audio per audio-chunk, so a player can start on the first one.
constexpr size_t kMaxSamplesPerAudioChunk = 2400;
constexpr const char *kBuiltinVoiceName = "default";

// What ends a connection with an error event {text, code}.
class WyomingError : public std::runtime_error {
  public:
    WyomingError(std::string code, const std::string &text) : std::runtime_error(text), code(std::move(code)) {}
    std::string code;
};

// The peer is gone: nothing more can be sent.
struct PeerGone {};

WyomingError from_api_error(const ApiError &e) {
    if (!e.code.empty()) return WyomingError(e.code, e.what());
    return WyomingError(e.status == 413   ? "text_too_long"
                        : e.status >= 500 ? "server_error"
                                          : "invalid_request",
                        e.what());
}

const json &object_field(const json &data, const char *name, const json &fallback) {
    const auto it = data.find(name);
    if (it == data.end() || it->is_null()) return fallback;
    if (!it->is_object())
        throw WyomingError("invalid_request", concat("'", name, "' must be a JSON object, got ", it->type_name()));
    return *it;
}

std::string text_field(const Event &event) {
    const auto it = event.data.find("text");
    if (it == event.data.end() || !it->is_string())
        throw WyomingError("invalid_request", concat(event.type, " needs 'text', a string"));
    return it->get<std::string>();
}

// The voice and parameters a synthesize or synthesize-start asks for.
struct SpeechSettings {
    std::string voice = kBuiltinVoiceName;
    json parameters = json::object(); // the HTTP API's parameter fields, checked by parse_speech_request
};

// A string field of the voice object, or nullopt when absent or null.
std::optional<std::string> voice_string(const json &voice, const char *key) {
    const auto field = voice.find(key);
    if (field == voice.end() || field->is_null()) return std::nullopt;
    if (!field->is_string())
        throw WyomingError("invalid_request", concat("'voice.", key, "' must be a string, got ", field->type_name()));
    return field->get<std::string>();
}

// takes_language: the model speaks the language voice.language names (the multilingual one); the
// others speak theirs whatever a client asks. voice.speaker selects nothing: a voice is one speaker.
SpeechSettings speech_settings(const json &data, bool takes_language) {
    SpeechSettings settings;
    const json none = json::object();
    const json &voice = object_field(data, "voice", none);
    if (const std::optional<std::string> name = voice_string(voice, "name")) settings.voice = *name;
    settings.parameters = object_field(data, "chatterbox", none);
    for (const auto &[key, value] : settings.parameters.items())
        if (key != "seed" && key != "language" && !find_synthesis_parameter(key))
            throw WyomingError("invalid_request", concat("'chatterbox.", key, "' is no synthesis parameter"));
    if (const std::optional<std::string> language = voice_string(voice, "language");
        language && takes_language && !settings.parameters.contains("language"))
        settings.parameters["language"] = *language;
    return settings;
}

// The request the HTTP API would make of the same text, voice and parameters: the same checks,
// the same limits, the same defaults.
SpeechRequest speech_request(const std::string &text, const SpeechSettings &settings, const RequestLimits &limits) {
    json body = settings.parameters;
    body["input"] = text;
    body["voice"] = settings.voice;
    try {
        return parse_speech_request(body.dump(), limits);
    } catch (const ApiError &e) {
        throw from_api_error(e);
    }
}

// The request's synthesis options, checked as PipelineSession::synthesize checks them; throws InvalidArgument.
SynthesisOptions checked_options(const PipelineModel &engine, const SpeechRequest &request) {
    SynthesisOptions synthesis;
    synthesis.params = request.params;
    check_synthesis(engine, request.input, synthesis);
    return synthesis;
}

// What every voice speaks: the multilingual model's languages, the others' English.
json model_languages(const PipelineModel &engine) {
    if (!engine.text().has_languages()) return json::array({"en"});
    json codes = json::array();
    for (const text::Language &language : text::supported_languages()) codes.push_back(language.code);
    return codes;
}

json voice_entry(const std::string &name, const std::string &description, const json &attribution,
                 const json &languages) {
    return {{"name", name},       {"description", description}, {"attribution", attribution}, {"installed", true},
            {"version", nullptr}, {"languages", languages},     {"speakers", nullptr}};
}

class Connection {
  public:
    Connection(const WyomingContext &context, int socket)
        : context_(context), socket_(socket), parser_(context.limits),
          audio_format_({{"rate", context.engine.sample_rate()}, {"width", kBytesPerSample}, {"channels", 1}}) {}

    void serve() {
        char buffer[16 << 10];
        try {
            for (;;) {
                const ssize_t n = recv(socket_, buffer, sizeof buffer, 0);
                if (n == 0) return; // the peer closed, or stop() shut the connection down
                if (n < 0) {
                    if (errno == EINTR) continue;
                    if (errno == EAGAIN || errno == EWOULDBLOCK)
                        send_error("idle_timeout", "no event for too long; the connection is closed");
                    return;
                }
                parser_.feed(buffer, size_t(n));
                while (std::optional<Event> event = parser_.next()) handle(*event);
            }
        } catch (const wyoming::ProtocolError &e) {
            send_error(e.code, e.what());
        } catch (const WyomingError &e) {
            send_error(e.code, e.what());
        } catch (const PeerGone &) {
        } catch (const std::exception &e) {
            send_error("server_error", e.what());
        }
    }

  private:
    void handle(const Event &event) {
        context_.metrics.count_wyoming_event(event.type);
        const std::string &type = event.type;
        if (type == "describe") {
            send("info", wyoming_info(context_.engine, context_.voices));
        } else if (type == "ping") {
            json data = json::object();
            if (const auto text = event.data.find("text"); text != event.data.end()) data["text"] = *text;
            send("pong", data);
        } else if (type == "synthesize") {
            if (streaming_) return; // a client's copy of the streamed text, for servers that do not stream
            const std::string text = text_field(event);
            const SpeechSettings settings = speech_settings(event.data, context_.engine.text().has_languages());
            begin_answer();
            speak(text, settings, /*streamed=*/false);
            finish_audio();
            answer_.reset();
        } else if (type == "synthesize-start") {
            if (streaming_)
                throw out_of_order("synthesize-start inside a streamed synthesis; end it with synthesize-stop");
            stream_settings_ = speech_settings(event.data, context_.engine.text().has_languages());
            // The voice and parameters are refused now, before any text comes; after this, a
            // sentence that check_synthesis refuses is one with nothing to say.
            const SpeechRequest probe = speech_request("Hello.", stream_settings_, context_.options.limits);
            try {
                checked_options(context_.engine, probe);
            } catch (const InvalidArgument &e) {
                throw WyomingError("invalid_request", e.what());
            }
            voice(stream_settings_, probe);
            begin_answer();
            streaming_ = true;
            unspoken_.clear();
        } else if (type == "synthesize-chunk") {
            if (!streaming_)
                throw out_of_order("synthesize-chunk outside a streamed synthesis; begin with synthesize-start");
            unspoken_ += text_field(event);
            if (code_points(unspoken_) > context_.options.limits.max_input_chars)
                throw WyomingError("text_too_long", concat("the streamed text holds a sentence longer than ",
                                                           context_.options.limits.max_input_chars, " characters"));
            speak_complete_sentences();
        } else if (type == "synthesize-stop") {
            if (!streaming_) throw out_of_order("synthesize-stop outside a streamed synthesis");
            for (const std::string &sentence : text::split_sentences(unspoken_))
                speak(sentence, stream_settings_, /*streamed=*/true);
            streaming_ = false;
            unspoken_.clear();
            finish_audio();
            send("synthesize-stopped");
            answer_.reset();
        } else {
            // The stream is intact: answered, and the connection goes on.
            send_error("unknown_event", concat("event type '", type.substr(0, 64),
                                               "' is unknown here; this server answers describe, synthesize, "
                                               "synthesize-start, synthesize-chunk, synthesize-stop and ping"));
        }
    }

    // From now until its last event, the answer is in flight: a drain waits for it (and refuses
    // the next), its deadline runs, and a hang-up of the client cancels it.
    void begin_answer() {
        answer_ = context_.watch.begin(socket_);
        if (!answer_) throw from_api_error(draining_error());
    }

    static WyomingError out_of_order(const std::string &text) { return WyomingError("out_of_order", text); }

    // Every sentence of the streamed text but the last, which may still grow: the splitter calls a
    // sentence complete only once it sees the next one begin (a period can also end "Dr.").
    void speak_complete_sentences() {
        const std::vector<std::string> sentences = text::split_sentences(unspoken_);
        if (sentences.size() < 2) return;
        // The splitter trims; a space the next chunk follows must stay ("one. two " + "three").
        const bool space_at_end = std::isspace(static_cast<unsigned char>(unspoken_.back())) != 0;
        for (size_t i = 0; i + 1 < sentences.size(); ++i) speak(sentences[i], stream_settings_, /*streamed=*/true);
        unspoken_ = sentences.back() + (space_at_end ? " " : "");
    }

    VoiceConditionals voice(const SpeechSettings &settings, const SpeechRequest &request) const {
        try {
            return resolve_voice(context_.engine, context_.voices, settings.voice, request.params.exaggeration);
        } catch (const ApiError &e) {
            throw from_api_error(e);
        }
    }

    // Speaks one text: audio-start first when none was sent, then its audio as it is made. A
    // streamed sentence after the first begins with the pause the long-text pipeline puts between
    // sentences; one with nothing to say ("...") is skipped.
    void speak(const std::string &text, const SpeechSettings &settings, bool streamed) {
        const SpeechRequest request = speech_request(text, settings, context_.options.limits);
        SynthesisOptions synthesis;
        try {
            synthesis = checked_options(context_.engine, request);
        } catch (const InvalidArgument &e) {
            if (streamed) return; // the parameters passed at synthesize-start: it is the text
            throw WyomingError("invalid_request", e.what());
        }
        const VoiceConditionals chosen = voice(settings, request);
        const SpeechOperations operations{context_.watch, context_.metrics};
        synthesis.cancel = answer_->cancel_flag();
        synthesis.stream = true; // the same windows as the HTTP API, so the same audio
        std::shared_ptr<PipelineSession> session = context_.pool.acquire();
        if (!session)
            throw WyomingError("server_busy", concat("all ", context_.pool.size(),
                                                     " sessions are busy and the queue is full; retry later"));
        const int rate = context_.engine.sample_rate();
        const std::unique_ptr<audio::StreamEncoder> encoder =
            audio::make_stream_encoder(audio::AudioFormat::pcm, rate, audio::EncodedOutput::stream);
        if (!audio_started_) {
            send("audio-start", audio_format_);
            audio_started_ = true;
        } else if (streamed) {
            const std::vector<float> pause(size_t(std::lround(request.params.sentence_pause * rate)), 0.0f);
            if (!send_audio(encoder->encode(pause.data(), pause.size()))) throw PeerGone{};
        }
        synthesis.on_chunk = [&](const float *samples, size_t n) { return send_audio(encoder->encode(samples, n)); };
        try {
            run_watched(operations, *answer_, [&] {
                SynthesisResult result = session->synthesize(request.input, chosen, synthesis);
                if (!send_audio(encoder->finish())) throw Cancelled("the client is gone");
                return result;
            });
        } catch (const ApiError &e) {
            if (peer_gone_) throw PeerGone{};
            throw from_api_error(e);
        }
    }

    // audio-stop, after an audio-start (sent now when nothing was spoken: an empty stream).
    void finish_audio() {
        if (!audio_started_) send("audio-start", audio_format_);
        send("audio-stop");
        audio_started_ = false;
    }

    // False when the peer is gone (the synthesis is then cancelled).
    bool send_audio(const std::string &pcm) {
        const size_t max_bytes = kMaxSamplesPerAudioChunk * kBytesPerSample;
        for (size_t at = 0; at < pcm.size(); at += max_bytes) {
            if (!send_all(socket_,
                          encode_event("audio-chunk", audio_format_, std::string_view(pcm).substr(at, max_bytes)))) {
                peer_gone_ = true;
                return false;
            }
        }
        return true;
    }

    void send(const std::string &type, const json &data = json::object()) {
        if (!send_all(socket_, encode_event(type, data))) throw PeerGone{};
    }

    void send_error(const std::string &code, const std::string &text) {
        send_all(socket_, encode_event("error", {{"text", text}, {"code", code}})); // the last word either way
    }

    const WyomingContext &context_;
    const int socket_;
    wyoming::EventParser parser_;
    const json audio_format_;
    bool peer_gone_ = false;
    std::unique_ptr<WatchedRequest> answer_; // the synthesize or streamed synthesis being answered
    bool audio_started_ = false;
    // The streamed synthesis (synthesize-start .. synthesize-stop) under way.
    bool streaming_ = false;
    SpeechSettings stream_settings_;
    std::string unspoken_; // its text not spoken yet: the sentence not known to be complete
};

} // namespace

bool send_all(int socket, const std::string &bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
        // MSG_NOSIGNAL: a peer that has gone is a failed write, not SIGPIPE.
        const ssize_t n = ::send(socket, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false; // gone, or SO_SNDTIMEO passed
        sent += size_t(n);
    }
    return true;
}

json wyoming_info(const PipelineModel &engine, const VoiceLibrary &voices) {
    const json resemble = {{"name", "Resemble AI"}, {"url", "https://github.com/resemble-ai/chatterbox"}};
    const json library = {{"name", "chatterbox-server voice library"}, {"url", ""}};
    const json languages = model_languages(engine);
    json voice_list = json::array({voice_entry(kBuiltinVoiceName, "the model's built-in voice", resemble, languages)});
    for (const VoiceInfo &info : voices.list())
        voice_list.push_back(voice_entry(
            info.name, concat("voice library, from a recording of ", std::lround(info.source_seconds), " s"), library,
            languages));
    const json program = {{"name", "chatterbox"},
                          {"description", concat("Chatterbox text-to-speech (", engine.description(), ")")},
                          {"attribution", resemble},
                          {"installed", true},
                          {"version", nullptr},
                          {"voices", voice_list},
                          {"supports_synthesize_streaming", true}};
    // The other services' lists are empty, for readers that expect them all.
    return {{"asr", json::array()},    {"tts", json::array({program})}, {"handle", json::array()},
            {"intent", json::array()}, {"wake", json::array()},         {"mic", json::array()},
            {"snd", json::array()}};
}

void serve_wyoming_connection(const WyomingContext &context, int socket) { Connection(context, socket).serve(); }

} // namespace chatterbox::server
