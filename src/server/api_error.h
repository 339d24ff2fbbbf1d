#pragma once
// An error answered to an HTTP client, shaped as OpenAI's API shapes them:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": null}}

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace chatterbox::server {

class ApiError : public std::runtime_error {
  public:
    ApiError(int status, const std::string &message, std::string param = "", std::string type = "invalid_request_error",
             std::string code = "")
        : std::runtime_error(message), status(status), param(std::move(param)), type(std::move(type)),
          code(std::move(code)) {}

    int status;        // HTTP status
    std::string param; // the request field at fault; "" : null
    std::string type;  // invalid_request_error, server_error ...
    std::string code;  // a machine-readable reason; "" : null

    nlohmann::json fields() const; // {"message": ..., "type": ..., "param": ..., "code": ...}
    std::string json() const;      // {"error": fields()}
};

// 413 when a request body of `bytes` is over `limit` bytes.
void check_body_size(size_t bytes, size_t limit);

} // namespace chatterbox::server
