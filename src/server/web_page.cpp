#include "server/web_page.h"

#include "server/api_error.h"
#include "server/embedded_files.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstring>

namespace chatterbox::server {
namespace {

using nlohmann::json;

// OpenAI's response formats and its documented speed range; the page offers what this server
// accepts of them, found by asking the request parser itself, so the page follows the server.
constexpr std::array<const char *, 6> kOpenAiFormats = {"wav", "pcm", "flac", "mp3", "opus", "aac"};
constexpr double kOpenAiSlowest = 0.25, kOpenAiFastest = 4.0;

bool parser_accepts(const json &extra_fields, const RequestLimits &limits) {
    json body = {{"input", "a"}, {"voice", "default"}};
    body.update(extra_fields);
    try {
        parse_speech_request(body.dump(), limits);
        return true;
    } catch (const ApiError &) {
        return false;
    }
}

const char *content_type(const std::string &path) {
    const auto ends_with = [&](const char *suffix) {
        const size_t n = std::strlen(suffix);
        return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
    };
    if (ends_with(".html")) return "text/html; charset=utf-8";
    if (ends_with(".js")) return "text/javascript; charset=utf-8";
    if (ends_with(".css")) return "text/css; charset=utf-8";
    if (ends_with(".svg")) return "image/svg+xml";
    return "application/octet-stream";
}

const EmbeddedFile *find_embedded_file(const std::string &path) {
    for (const EmbeddedFile &file : kEmbeddedFiles)
        if (path == file.path) return &file;
    return nullptr;
}

void send_file(const std::string &path, httplib::Response &response) {
    const EmbeddedFile *file = find_embedded_file(path);
    if (!file) {
        response.status = 404; // the server's error handler writes the JSON error
        return;
    }
    // no-cache: a browser revalidates, so a rebuilt server's page is seen at once.
    response.set_header("Cache-Control", "no-cache");
    response.set_content(std::string(file->bytes()), content_type(path));
}

} // namespace

std::string web_page_parameters_json(const RequestLimits &limits) {
    json parameters = json::array();
    for (const SynthesisParameter &p : synthesis_parameters()) {
        parameters.push_back({{"name", p.name},
                              {"meaning", p.meaning},
                              {"min", p.lo},
                              {"max", p.hi},
                              {"min_excluded", p.lo_excluded},
                              {"integer", p.integer},
                              {"flag", p.flag != nullptr},
                              {"default", p.default_value()}});
    }
    // OpenAI's speed, where the table does not hold it: the range the parser takes, 1 alone if it
    // does not time-stretch.
    if (!find_synthesis_parameter("speed")) {
        const bool stretches =
            parser_accepts({{"speed", kOpenAiSlowest}}, limits) && parser_accepts({{"speed", kOpenAiFastest}}, limits);
        parameters.push_back({{"name", "speed"},
                              {"meaning", stretches ? "speaking rate, pitch kept" : "speaking rate: only 1 here"},
                              {"min", stretches ? kOpenAiSlowest : 1.0},
                              {"max", stretches ? kOpenAiFastest : 1.0},
                              {"min_excluded", false},
                              {"integer", false},
                              {"flag", false},
                              {"default", 1.0}});
    }
    json formats = json::array();
    for (const char *format : kOpenAiFormats)
        if (parser_accepts({{"response_format", format}}, limits)) formats.push_back(format);
    return json{{"parameters", parameters}, {"response_formats", formats}, {"max_input_chars", limits.max_input_chars}}
        .dump();
}

void add_web_page_routes(httplib::Server &http, const RequestLimits &limits) {
    http.Get("/", [](const httplib::Request &, httplib::Response &response) { send_file("index.html", response); });
    // Computed once: the table and the parser do not change while the server runs.
    const std::string parameters = web_page_parameters_json(limits);
    http.Get("/web/parameters.json", [parameters](const httplib::Request &, httplib::Response &response) {
        response.set_header("Cache-Control", "no-cache");
        response.set_content(parameters, "application/json");
    });
    http.Get(R"(/web/([A-Za-z0-9_.-]+))", [](const httplib::Request &request, httplib::Response &response) {
        send_file(request.matches[1].str(), response);
    });
}

} // namespace chatterbox::server
