#include "server/voice_routes.h"

#include "audio/audio_encoding.h"
#include "audio/audio_file.h"
#include "core/error.h"
#include "server/api_error.h"
#include "server/multipart_form.h"
#include "server/speech_handler.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

namespace chatterbox::server {
namespace {

using nlohmann::json;

ApiError invalid(const std::string &param, const std::string &message) { return ApiError(400, message, param); }

std::string checked_name(const std::string &name, const char *param) {
    if (const std::string problem = voice_name_problem(name); !problem.empty())
        // Quoted as JSON, so a control character (NUL too) shows as an escape.
        throw invalid(param, concat("voice name ", json(name).dump(), " is refused: ", problem));
    return name;
}

// The uploaded file's extension when it looks like one (the reader detects formats by content;
// the extension only helps it with headerless mp3).
std::string safe_extension(const std::string &filename) {
    std::string ext = std::filesystem::path(filename).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const bool plain = ext.size() >= 2 && ext.size() <= 6 &&
                       std::all_of(ext.begin() + 1, ext.end(), [](unsigned char c) { return std::isalnum(c); });
    return plain ? ext : "";
}

// What went wrong with an uploaded recording, for the client: names the field and the uploaded
// file, not the scratch path the server read it from.
ApiError unusable_recording(const char *field, const FormPart &part, const std::string &scratch, std::string message) {
    const std::string shown = part.filename.empty() ? "the upload" : "'" + part.filename + "'";
    for (size_t at; (at = message.find("'" + scratch + "'")) != std::string::npos;)
        message.replace(at, scratch.size() + 2, shown);
    if (message.rfind("read_audio: ", 0) == 0) message.erase(0, 12);
    return invalid(field, concat("'", field, "' is not a usable recording: ", message));
}

audio::AudioBuffer read_recording(const VoiceLibrary &voices, const char *field, const FormPart &part) {
    if (part.content.empty()) throw invalid(field, concat("'", field, "' is empty: upload a recording"));
    const VoiceLibrary::Scratch scratch(voices.dir(), part.content, safe_extension(part.filename));
    audio::ReadOptions options;
    options.max_seconds = kMaxReferenceSeconds;
    try {
        return audio::read_audio(scratch.path(), options);
    } catch (const Error &e) {
        throw unusable_recording(field, part, scratch.path(), e.what());
    }
}

// Runs a computation on a client's recording: what the engine refuses in it is the client's 400.
template <class Result, class Compute> Result on_recording(const char *field, Compute &&compute) {
    try {
        return compute();
    } catch (const Cancelled &) {
        throw;
    } catch (const Error &e) {
        throw invalid(field, concat("'", field, "' is not a usable recording: ", e.what()));
    }
}

std::shared_ptr<PipelineSession> acquire_session(SessionPool &pool, const ServerOptions &options,
                                                 httplib::Response &response) {
    std::shared_ptr<PipelineSession> session = pool.acquire();
    if (session) return session;
    response.set_header("Retry-After", std::to_string(options.retry_after_seconds));
    throw ApiError(503, concat("all ", pool.size(), " sessions are busy and the queue is full; retry later"), "",
                   "server_error", "server_busy");
}

void send_json(httplib::Response &response, int status, const json &body) {
    response.status = status;
    response.set_content(body.dump(), "application/json");
}

ApiError no_such_voice(const std::string &name) {
    return ApiError(404, concat("the library has no voice '", name, "'"), "name", "invalid_request_error",
                    "voice_not_found");
}

ApiError voice_exists(const std::string &name) {
    return ApiError(409, concat("the library has a voice '", name, "' already; send overwrite=true to replace it"),
                    "name", "invalid_request_error", "voice_exists");
}

void create_voice(const MultipartForm &form, SessionPool &pool, VoiceLibrary &voices, const ServerOptions &options,
                  httplib::Response &response) {
    const std::string name = checked_name(form.required("name", "the voice's name").content, "name");
    const bool overwrite = parse_flag(form, "overwrite");
    if (!overwrite && voices.info(name)) throw voice_exists(name); // before the costly part
    const audio::AudioBuffer recording =
        read_recording(voices, "file", form.required("file", "a recording of the voice"));

    std::shared_ptr<PipelineSession> session = acquire_session(pool, options, response);
    const VoiceConditionals voice =
        on_recording<VoiceConditionals>("file", [&] { return session->voice_from_audio(recording, 0.5f); });
    session.reset();
    const std::optional<VoiceInfo> stored = voices.store(name, voice, recording.seconds(), overwrite);
    if (!stored) throw voice_exists(name);
    send_json(response, 201, stored->json());
}

void convert_voice(const MultipartForm &form, const PipelineModel &engine, SessionPool &pool,
                   const VoiceLibrary &voices, const ServerOptions &options, httplib::Response &response) {
    const FormPart &source_part = form.required("file", "the recording to convert");
    const FormPart *voice_name = form.part("voice");
    const FormPart *voice_part = form.part("voice_file");
    if (!voice_name && !voice_part)
        throw invalid("voice", "'voice' (a library voice's name) or 'voice_file' (a recording) is required");
    if (voice_name && voice_part) throw invalid("voice", "give 'voice' or 'voice_file', not both");
    const ResponseFormat format = parse_response_format(form.text("response_format").value_or(""));
    SynthesisOptions synthesis;
    synthesis.params.sampling.seed = parse_seed(form);

    std::optional<VoiceConditionals> target;
    if (voice_name) target = resolve_voice(engine, voices, voice_name->content, synthesis.params.exaggeration);
    const audio::AudioBuffer source = read_recording(voices, "file", source_part);
    std::optional<audio::AudioBuffer> reference;
    if (voice_part) reference = read_recording(voices, "voice_file", *voice_part);

    std::shared_ptr<PipelineSession> session = acquire_session(pool, options, response);
    if (reference)
        target = on_recording<VoiceConditionals>(
            "voice_file", [&] { return session->voice_from_audio(*reference, synthesis.params.exaggeration); });
    const SynthesisResult result =
        on_recording<SynthesisResult>("file", [&] { return session->convert(source, *target, synthesis); });
    session.reset();
    response.set_content(audio::encode_audio(result.wave, result.sample_rate, format), content_type(format));
}

} // namespace

VoiceConditionals resolve_voice(const PipelineModel &engine, const VoiceLibrary &voices, const std::string &name,
                                float exaggeration) {
    if (std::shared_ptr<const VoiceConditionals> stored = voices.voice(name)) {
        VoiceConditionals voice = *stored;
        // As for the built-in voice: exaggeration is a field of the conditionals, applied each synthesis.
        voice.t3.exaggeration = exaggeration;
        return voice;
    }
    if (is_builtin_voice_name(name)) return engine.builtin_voice(exaggeration);
    throw invalid("voice", concat("voice '", name,
                                  "' is unknown: not in the voice library (GET /v1/audio/voices), nor 'default' or "
                                  "one of OpenAI's voice names (the model's built-in voice)"));
}

void add_voice_routes(httplib::Server &http, const PipelineModel &engine, SessionPool &pool, VoiceLibrary &voices,
                      const ServerOptions &options) {
    http.Get("/v1/audio/voices", [&voices](const httplib::Request &, httplib::Response &response) {
        json data = json::array();
        for (const VoiceInfo &info : voices.list()) data.push_back(info.json());
        send_json(response, 200, {{"object", "list"}, {"data", data}});
    });
    http.Post("/v1/audio/voices", [&](const httplib::Request &request, httplib::Response &response) {
        create_voice(MultipartForm(request, {"name", "file", "overwrite"}, options.max_upload_bytes), pool, voices,
                     options, response);
    });
    // (.*), not ([^/]+): a name with a slash (decoded from %2F) is refused as a name, not a route.
    http.Get("/v1/audio/voices/(.*)", [&voices](const httplib::Request &request, httplib::Response &response) {
        const std::string name = checked_name(request.matches[1], "name");
        const std::optional<VoiceInfo> info = voices.info(name);
        if (!info) throw no_such_voice(name);
        send_json(response, 200, info->json());
    });
    http.Delete("/v1/audio/voices/(.*)", [&voices](const httplib::Request &request, httplib::Response &response) {
        const std::string name = checked_name(request.matches[1], "name");
        if (!voices.remove(name)) throw no_such_voice(name);
        send_json(response, 200, {{"object", "voice"}, {"name", name}, {"deleted", true}});
    });
    http.Post("/v1/audio/voice-conversion", [&](const httplib::Request &request, httplib::Response &response) {
        convert_voice(MultipartForm(request, {"file", "voice", "voice_file", "response_format", "seed"},
                                    options.max_upload_bytes),
                      engine, pool, voices, options, response);
    });
}

} // namespace chatterbox::server
