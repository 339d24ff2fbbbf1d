// libFuzzer: a POST /v1/audio/speech body through parse_speech_request (JSON, every field's type
// and range, the input length limit). Refusals are ApiErrors with a 4xx status.
#include "fuzz_support.h"
#include "server/api_error.h"
#include "server/speech_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace chatterbox;
    const std::string body(fuzz::as_text(data, size));
    server::RequestLimits limits;
    limits.max_input_chars = 256;
    try {
        const server::SpeechRequest request = server::parse_speech_request(body, limits);
        if (request.input.empty() || request.input.size() > 4 * limits.max_input_chars) std::abort();
    } catch (const server::ApiError &e) {
        if (e.status < 400 || e.status > 499 || std::string_view(e.what()).empty()) std::abort();
    }
    return 0;
}
