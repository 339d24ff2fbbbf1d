#include "server/api_error.h"

#include "core/error.h"

#include <nlohmann/json.hpp>

namespace chatterbox::server {

nlohmann::json ApiError::fields() const {
    using nlohmann::json;
    const auto or_null = [](const std::string &s) { return s.empty() ? json(nullptr) : json(s); };
    return {{"message", what()}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}};
}

std::string ApiError::json() const { return nlohmann::json{{"error", fields()}}.dump(); }

void check_body_size(size_t bytes, size_t limit) {
    if (bytes > limit)
        throw ApiError(413, concat("the request body is too large: ", bytes, " bytes; the limit is ", limit), "",
                       "invalid_request_error", "body_too_large");
}

} // namespace chatterbox::server
