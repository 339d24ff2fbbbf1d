// libFuzzer: a Wyoming connection's bytes through the event parser (src/server/wyoming_event.h),
// all at once and again in pieces whose size the first byte picks: both must give the same events
// and the same refusal, every event within the limits, and each event must come back unchanged
// when encoded and parsed again. A refusal is a ProtocolError that names its code and says why.
#include "fuzz_support.h"
#include "server/wyoming_event.h"

#include <algorithm>
#include <vector>

namespace {

using namespace chatterbox::server::wyoming;

// Small limits, so that inputs reach them.
EventLimits limits() {
    EventLimits limits;
    limits.max_header_bytes = 512;
    limits.max_data_bytes = 1024;
    limits.max_payload_bytes = 256;
    return limits;
}

struct Outcome {
    std::vector<Event> events;
    std::string refusal; // code, "" when none
};

void check_event(const Event &event, const EventLimits &limits) {
    if (event.type.empty() || !event.data.is_object() || event.payload.size() > limits.max_payload_bytes) std::abort();
}

Outcome parse(std::string_view bytes, size_t piece) {
    Outcome outcome;
    EventParser parser(limits());
    try {
        for (size_t at = 0; at < bytes.size(); at += piece) {
            const std::string_view part = bytes.substr(at, piece);
            parser.feed(part.data(), part.size());
            while (std::optional<Event> event = parser.next()) {
                check_event(*event, limits());
                outcome.events.push_back(std::move(*event));
            }
        }
    } catch (const ProtocolError &e) {
        if (e.code.empty() || std::string_view(e.what()).empty()) std::abort();
        outcome.refusal = e.code;
    }
    return outcome;
}

bool same(const Event &a, const Event &b) { return a.type == b.type && a.data == b.data && a.payload == b.payload; }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const std::string_view bytes = chatterbox::fuzz::as_text(data + 1, size - 1);
    const Outcome whole = parse(bytes, std::max<size_t>(bytes.size(), 1));
    const Outcome pieces = parse(bytes, size_t(data[0] % 16) + 1);
    if (whole.refusal != pieces.refusal || whole.events.size() != pieces.events.size()) std::abort();
    for (size_t i = 0; i < whole.events.size(); ++i) {
        if (!same(whole.events[i], pieces.events[i])) std::abort();
        const Event &event = whole.events[i];
        // The encoder writes the data apart from the header: data within the limit must round-trip.
        const std::string encoded = encode_event(event.type, event.data, event.payload);
        EventLimits roomy = limits();
        roomy.max_header_bytes = roomy.max_data_bytes = encoded.size();
        EventParser again(roomy);
        again.feed(encoded.data(), encoded.size());
        const std::optional<Event> back = again.next();
        if (!back || !same(*back, event) || !again.between_events()) std::abort();
    }
    return 0;
}
