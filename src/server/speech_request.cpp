#include "server/speech_request.h"

#include "core/error.h"
#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace chatterbox::server {
namespace {

using nlohmann::json;

constexpr std::array<const char *, 12> kBuiltinVoiceNames = {"default", "alloy", "ash",  "ballad", "coral",   "echo",
                                                             "fable",   "onyx",  "nova", "sage",   "shimmer", "verse"};

ApiError invalid(const std::string &param, const std::string &message) { return ApiError(400, message, param); }

// A string field; "" when absent and not required.
std::string string_field(const json &body, const char *name, bool required) {
    const auto it = body.find(name);
    if (it == body.end()) {
        if (required) throw invalid(name, concat("'", name, "' is required"));
        return "";
    }
    if (!it->is_string()) throw invalid(name, concat("'", name, "' must be a string, got ", it->type_name()));
    return it->get<std::string>();
}

} // namespace

size_t code_points(const std::string &utf8) {
    return size_t(std::count_if(utf8.begin(), utf8.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

ResponseFormat parse_response_format(const std::string &name) {
    if (name.empty()) return ResponseFormat::wav;
    if (const audio::AudioFormatInfo *format = audio::find_audio_format(name)) return format->format;
    throw invalid("response_format",
                  concat("response_format '", name, "' is unknown; use ", audio::audio_format_names()));
}

namespace {

StreamFormat parse_stream_format(const std::string &name) {
    if (name.empty()) return StreamFormat::none;
    if (name != "audio" && name != "sse")
        throw invalid("stream_format", concat("stream_format '", name, "' is unknown; use audio or sse"));
    return name == "audio" ? StreamFormat::audio : StreamFormat::sse;
}

void parse_seed(const json &value, SynthesisParams &params) {
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0))
        throw invalid("seed", concat("'seed' must be a non-negative integer, got ", value.dump()));
    params.sampling.seed = value.get<uint64_t>();
}

// A number of the table; an integer parameter also takes an integral float (8.0), as JSON writers
// that keep every number a double send it. A flag (ignore_eos, split_text) is a JSON boolean.
void parse_parameter(const SynthesisParameter &parameter, const json &value, SynthesisParams &params) {
    if (parameter.flag) {
        if (!value.is_boolean())
            throw invalid(parameter.name, concat("'", parameter.name, "' must be true or false, got ", value.dump()));
        parameter.set(params, value.get<bool>() ? 1.0 : 0.0);
        return;
    }
    const char *kind = parameter.integer ? "an integer" : "a number";
    if (!value.is_number() || (parameter.integer && value.get<double>() != std::floor(value.get<double>())))
        throw invalid(parameter.name, concat("'", parameter.name, "' must be ", kind, ", got ", value.dump()));
    const double x = value.get<double>();
    try {
        parameter.check(x);
    } catch (const InvalidArgument &e) {
        throw invalid(parameter.name, e.what());
    }
    parameter.set(params, x);
}

bool is_openai_field(const std::string &name) {
    // speed is OpenAI's too, but checked by the parameter table like Chatterbox's own knobs.
    return name == "model" || name == "input" || name == "voice" || name == "response_format" ||
           name == "stream_format";
}

} // namespace

bool is_builtin_voice_name(const std::string &voice) {
    return std::find(kBuiltinVoiceNames.begin(), kBuiltinVoiceNames.end(), voice) != kBuiltinVoiceNames.end();
}

SpeechRequest parse_speech_request(const std::string &body_text, const RequestLimits &limits) {
    const json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) throw invalid("", "the request body is not valid JSON");
    if (!body.is_object()) throw invalid("", "the request body must be a JSON object");

    SpeechRequest request;
    request.model = string_field(body, "model", false);
    request.input = string_field(body, "input", true);
    if (request.input.empty()) throw invalid("input", "'input' is empty: there is nothing to say");
    if (code_points(request.input) > limits.max_input_chars)
        throw ApiError(
            413,
            concat("'input' holds ", code_points(request.input), " characters; the limit is ", limits.max_input_chars),
            "input");
    request.voice = string_field(body, "voice", true); // resolved with the voice library (voice_routes.h)
    request.format = parse_response_format(string_field(body, "response_format", false));
    request.stream = parse_stream_format(string_field(body, "stream_format", false));
    // The multilingual model's language ("fr"); checked against the model in answer_speech.
    request.params.language = string_field(body, "language", false);

    for (const auto &[name, value] : body.items()) {
        if (is_openai_field(name) || name == "language") continue;
        if (name == "seed") {
            parse_seed(value, request.params);
        } else if (const SynthesisParameter *parameter = find_synthesis_parameter(name)) {
            parse_parameter(*parameter, value, request.params);
        } else if (name == "instructions") {
            throw invalid(name,
                          "'instructions' is not supported: Chatterbox takes exaggeration and cfg_weight instead");
        } else {
            throw invalid(name, concat("unknown field '", name, "'"));
        }
    }
    return request;
}

const char *content_type(ResponseFormat format) { return audio::audio_format_info(format).content_type; }

} // namespace chatterbox::server
