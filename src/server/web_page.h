#pragma once
// chatterbox-server's web page: the files under web/, compiled in (embedded_files.h), served without
// the API key (the page asks the user for one and sends it on its own /v1/ calls).
//
//   GET /                     web/index.html
//   GET /web/<file>           any other file of web/ (app.js, style.css)
//   GET /web/parameters.json  what the page offers: the shared parameter table's ranges and defaults
//                             (and speed's, where the table lacks it), the response formats this
//                             server accepts

#include "server/speech_request.h"

#include <string>

namespace httplib {
class Server;
}

namespace chatterbox::server {

void add_web_page_routes(httplib::Server &http, const RequestLimits &limits);

// The body of /web/parameters.json.
std::string web_page_parameters_json(const RequestLimits &limits);

} // namespace chatterbox::server
