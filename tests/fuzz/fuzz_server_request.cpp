// libFuzzer: one raw HTTP request through cpp-httplib's server side (request line, headers, chunked
// bodies, multipart/form-data) into the checks chatterbox-server's routes make before any session
// is taken: the speech body (parse_speech_request) and the voice routes' multipart forms
// (MultipartForm, parse_flag, parse_seed, voice names, response_format). A refusal must be a 4xx.
#include "fuzz_support.h"
#include "server/api_error.h"
#include "server/multipart_form.h"
#include "server/speech_request.h"
#include "server/voice_library.h"

#include <httplib.h>

#include <cstring>

namespace {

using namespace chatterbox::server;

// The request bytes as a connection that ends after them; the response is discarded.
class InputStream : public httplib::Stream {
  public:
    InputStream(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    bool is_readable() const override { return position_ < size_; }
    bool wait_readable() const override { return true; }
    bool wait_writable() const override { return true; }
    ssize_t read(char *ptr, size_t size) override {
        const size_t n = std::min(size, size_ - position_);
        std::memcpy(ptr, data_ + position_, n);
        position_ += n;
        return ssize_t(n);
    }
    ssize_t write(const char *, size_t size) override { return ssize_t(size); }
    void get_remote_ip_and_port(std::string &ip, int &port) const override { ip = "127.0.0.1", port = 40000; }
    void get_local_ip_and_port(std::string &ip, int &port) const override { ip = "127.0.0.1", port = 8080; }
    socket_t socket() const override { return INVALID_SOCKET; }
    time_t duration() const override { return 0; }

  private:
    const uint8_t *data_;
    size_t size_, position_ = 0;
};

// httplib::Server with its request processing reachable on a stream instead of a socket.
class InMemoryServer : public httplib::Server {
  public:
    using httplib::Server::process_request;
};

constexpr size_t kMaxUploadBytes = 1 << 16;

// A handler whose refusals become their status, as the real server's exception handler does;
// anything but an ApiError escaping a check is a finding.
template <class Check> httplib::Server::Handler checked(Check check) {
    return [check](const httplib::Request &request, httplib::Response &response) {
        try {
            check(request);
            response.status = 200;
        } catch (const ApiError &e) {
            if (e.status < 400 || e.status > 499 || std::string_view(e.what()).empty()) std::abort();
            response.status = e.status;
        } catch (...) {
            std::abort(); // httplib would answer 500 and hide it
        }
    };
}

InMemoryServer &server() {
    static InMemoryServer *http = [] {
        auto *s = new InMemoryServer;
        s->set_payload_max_length(kMaxUploadBytes);
        // The fields each route takes, as src/server/voice_routes.cpp lists them.
        s->Post("/v1/audio/speech", checked([](const httplib::Request &request) {
                    RequestLimits limits;
                    limits.max_input_chars = 256;
                    parse_speech_request(request.body, limits);
                }));
        s->Post("/v1/audio/voices", checked([](const httplib::Request &request) {
                    const MultipartForm form(request, {"name", "file", "overwrite"}, kMaxUploadBytes);
                    const std::string name = form.required("name", "the voice's name").content;
                    if (!voice_name_problem(name).empty()) throw ApiError(400, "bad name", "name");
                    parse_flag(form, "overwrite");
                    form.required("file", "a recording of the voice");
                }));
        s->Post("/v1/audio/voice-conversion", checked([](const httplib::Request &request) {
                    const MultipartForm form(request, {"file", "voice", "voice_file", "response_format", "seed"},
                                             kMaxUploadBytes);
                    form.required("file", "the recording to convert");
                    parse_response_format(form.text("response_format").value_or(""));
                    parse_seed(form);
                }));
        return s;
    }();
    return *http;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    InputStream stream(data, size);
    bool connection_closed = false;
    server().process_request(stream, "127.0.0.1", 40000, "127.0.0.1", 8080, true, connection_closed,
                             [](httplib::Request &) {});
    return 0;
}
