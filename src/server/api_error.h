// OpenAI-style API errors: what the server sends back when a request is refused
// or fails, as {"error": {"message", "type", "param", "code"}} with an HTTP status.
// `param` names the request field at fault (empty = null).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lmrun::server {

struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // the offending field, "" when none
    std::string code;   // machine-readable code, "" when none

    nlohmann::json to_json() const;
};

ApiError invalid_request(std::string message, std::string param = "");
ApiError model_not_found(const std::string& model);
ApiError unauthorized();
ApiError too_many_requests(int64_t limit);
ApiError unavailable(std::string message);
ApiError internal_error(std::string message);

// The field named at the start of an engine validation message
// ("top_p must be in (0, 1], got 2" -> "top_p", "stop[1] must ..." -> "stop").
std::string field_of_message(const std::string& message);

}  // namespace lmrun::server
