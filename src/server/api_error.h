// OpenAI-style API errors: what the server sends back when a request is refused or
// fails, as {"error": {"message", "type", "param", "code"}} with an HTTP status. `param`
// names the request field at fault (empty = null). Every status the server answers with
// an error comes from here, and api_error_from() is the one mapping of lmrun's Error
// kinds (core/result.h) to statuses:
//   InvalidArgument, Unsupported, Corrupt, ResourceExhausted -> 400 invalid_request_error
//   NotFound -> 404, Unavailable -> 503 server_error, Internal -> 500 server_error
// with the error's subject as `param`. A body over the size limit is 413 (the transport
// refuses it before it is parsed), a compressed body 415, a full queue 429.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "server/http_exchange.h"

namespace lmrun::server {

struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;                                         // the offending field, "" when none
    std::string code;                                          // machine-readable code, "" when none
    std::vector<std::pair<std::string, std::string>> headers;  // extra response headers (Retry-After, ...)

    nlohmann::json to_json() const;
};

ApiError api_error_from(const Error& error);

ApiError invalid_request(std::string message, std::string param = "");
ApiError model_not_found(const std::string& model);
ApiError unauthorized();
ApiError too_many_requests(int64_t limit);
ApiError payload_too_large(size_t limit_bytes);
ApiError unsupported_media_type(const std::string& content_encoding);
ApiError unavailable(std::string message);
ApiError internal_error(std::string message);

// The JSON response of an error.
HttpResponse error_response(const ApiError& error);

// The field named at the start of an engine validation message
// ("top_p must be in (0, 1], got 2" -> "top_p", "stop[1] must ..." -> "stop").
std::string field_of_message(const std::string& message);

}  // namespace lmrun::server
