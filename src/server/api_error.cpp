#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace chatterbox::server {

nlohmann::json ApiError::fields() const {
    using nlohmann::json;
    const auto or_null = [](const std::string &s) { return s.empty() ? json(nullptr) : json(s); };
    return {{"message", what()}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}};
}

std::string ApiError::json() const { return nlohmann::json{{"error", fields()}}.dump(); }

} // namespace chatterbox::server
