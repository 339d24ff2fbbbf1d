#include "server/wyoming_event.h"

#include "core/error.h"

namespace chatterbox::server::wyoming {
namespace {

using nlohmann::json;

json parse_object(std::string_view text, const char *code, const char *what) {
    // allow_exceptions false: malformed JSON and invalid UTF-8 come back as discarded, not thrown.
    json value = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) throw ProtocolError(code, concat("the event's ", what, " is not valid JSON"));
    if (!value.is_object())
        throw ProtocolError(code, concat("the event's ", what, " must be a JSON object, got ", value.type_name()));
    return value;
}

// data_length / payload_length: absent or null is 0.
size_t length_field(const json &header, const char *name, size_t limit, const char *too_large_code) {
    const auto it = header.find(name);
    if (it == header.end() || it->is_null()) return 0;
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
        throw ProtocolError("bad_header", concat("'", name, "' must be a non-negative integer, got ", it->dump()));
    const uint64_t length = it->get<uint64_t>();
    if (length > limit)
        throw ProtocolError(too_large_code, concat("'", name, "' is ", length, " bytes; the limit is ", limit));
    return size_t(length);
}

} // namespace

void EventParser::feed(const char *bytes, size_t size) {
    compact();
    buffer_.append(bytes, size);
}

void EventParser::compact() {
    if (position_ == 0) return;
    buffer_.erase(0, position_);
    position_ = 0;
}

std::optional<Event> EventParser::next() {
    if (stage_ == Stage::header) {
        const size_t newline = buffer_.find('\n', position_);
        const size_t line_length = (newline == std::string::npos ? buffer_.size() : newline) - position_;
        // Checked before the newline arrives too, so a peer that never sends one cannot fill memory.
        if (line_length > limits_.max_header_bytes)
            throw ProtocolError("header_too_long",
                                concat("the event header line is longer than ", limits_.max_header_bytes, " bytes"));
        if (newline == std::string::npos) return std::nullopt;
        const json header =
            parse_object(std::string_view(buffer_).substr(position_, line_length), "bad_header", "header line");
        position_ = newline + 1;

        const auto type = header.find("type");
        if (type == header.end() || !type->is_string() || type->get<std::string>().empty())
            throw ProtocolError("bad_header", "the event header has no 'type' string");
        pending_ = Event{type->get<std::string>(), json::object(), {}};
        const auto inline_data = header.find("data");
        if (inline_data != header.end() && !inline_data->is_null()) {
            if (!inline_data->is_object())
                throw ProtocolError(
                    "bad_header", concat("the header's 'data' must be a JSON object, got ", inline_data->type_name()));
            pending_.data = *inline_data;
        }
        data_length_ = length_field(header, "data_length", limits_.max_data_bytes, "data_too_large");
        payload_length_ = length_field(header, "payload_length", limits_.max_payload_bytes, "payload_too_large");
        stage_ = Stage::body;
    }
    if (buffer_.size() - position_ < data_length_ + payload_length_) return std::nullopt;
    if (data_length_ > 0) {
        const json data = parse_object(std::string_view(buffer_).substr(position_, data_length_), "bad_data", "data");
        for (const auto &[key, value] : data.items()) pending_.data[key] = value;
    }
    pending_.payload = buffer_.substr(position_ + data_length_, payload_length_);
    position_ += data_length_ + payload_length_;
    stage_ = Stage::header;
    data_length_ = payload_length_ = 0;
    return std::move(pending_);
}

std::string encode_event(const std::string &type, const json &data, std::string_view payload) {
    json header = {{"type", type}};
    // ensure_ascii off, as the reference writer: UTF-8 text goes as it is. Invalid UTF-8 (none of
    // ours: every string here was parsed or checked) would be replaced, not thrown.
    const std::string data_text = data.empty() ? "" : data.dump(-1, ' ', false, json::error_handler_t::replace);
    if (!data_text.empty()) header["data_length"] = data_text.size();
    if (!payload.empty()) header["payload_length"] = payload.size();
    std::string out = header.dump();
    out += '\n';
    out += data_text;
    out.append(payload.data(), payload.size());
    return out;
}

} // namespace chatterbox::server::wyoming
