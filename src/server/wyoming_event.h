#pragma once
// The Wyoming protocol's framing (Rhasspy / Home Assistant): every event is
//
//   one line of JSON, the header: {"type": "...", "data"?: {...}, "data_length"?: N, "payload_length"?: M,
//                                  "version"?: "..."}  '\n'
//   then data_length bytes of JSON (an object, merged over the header's "data"; its keys win)
//   then payload_length bytes of binary payload (audio for audio-chunk).
//
// EventParser takes the bytes as they arrive and hands out whole events. Everything is bounded
// before it is buffered: a header line longer than max_header_bytes (also when its newline has not
// come yet), a data_length or payload_length over its limit, a header or data that is not a JSON
// object, a missing or empty type, a length that is not a non-negative integer: each is a
// ProtocolError (the connection cannot be trusted after it and is closed).

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace chatterbox::server::wyoming {

struct Event {
    std::string type;
    nlohmann::json data = nlohmann::json::object(); // always an object
    std::string payload;
};

struct EventLimits {
    size_t max_header_bytes = 64 << 10;
    size_t max_data_bytes = 64 << 10;
    size_t max_payload_bytes = 64 << 10;
};

// A broken or oversized event; code is the machine-readable reason of the error event it is
// answered with (bad_header, header_too_long, data_too_large, payload_too_large, bad_data, ...).
class ProtocolError : public std::runtime_error {
  public:
    ProtocolError(std::string code, const std::string &text) : std::runtime_error(text), code(std::move(code)) {}
    std::string code;
};

class EventParser {
  public:
    explicit EventParser(const EventLimits &limits) : limits_(limits) {}

    // Appends bytes read from the connection.
    void feed(const char *bytes, size_t size);
    // The next whole event, or nullopt until more bytes are fed; throws ProtocolError.
    std::optional<Event> next();
    // Whether no part of an event is buffered: the peer may close here without losing anything.
    bool between_events() const { return stage_ == Stage::header && buffer_.size() == position_; }

  private:
    enum class Stage { header, body };
    void compact();

    const EventLimits limits_;
    std::string buffer_;
    size_t position_ = 0; // where the unparsed bytes begin
    Stage stage_ = Stage::header;
    Event pending_; // its header read, waiting for data and payload
    size_t data_length_ = 0, payload_length_ = 0;
};

// One event in the wire format: the header (type, data_length and payload_length when not zero),
// then the data's JSON when it is not empty, then the payload.
std::string encode_event(const std::string &type, const nlohmann::json &data = nlohmann::json::object(),
                         std::string_view payload = {});

} // namespace chatterbox::server::wyoming
