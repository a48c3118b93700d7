#include "server/api_error.h"

#include <cctype>

#include <fmt/format.h>

namespace lmrun::server {

nlohmann::json ApiError::to_json() const {
    auto null_if_empty = [](const std::string& value) {
        return value.empty() ? nlohmann::json() : nlohmann::json(value);
    };
    return {{"error",
             {{"message", message},
              {"type", type},
              {"param", null_if_empty(param)},
              {"code", null_if_empty(code)}}}};
}

ApiError api_error_from(const Error& error) {
    switch (error.kind) {
        case ErrorKind::InvalidArgument:
        case ErrorKind::Unsupported:
        case ErrorKind::Corrupt:
        case ErrorKind::ResourceExhausted:
            return ApiError{400, error.message, "invalid_request_error", error.subject, "", {}};
        case ErrorKind::NotFound:
            return ApiError{404, error.message, "invalid_request_error", error.subject, "not_found", {}};
        case ErrorKind::Unavailable:
            return unavailable(error.message);
        case ErrorKind::Internal:
            return internal_error(error.message);
    }
    return internal_error(error.message);
}

ApiError invalid_request(std::string message, std::string param) {
    return ApiError{400, std::move(message), "invalid_request_error", std::move(param), "", {}};
}

ApiError model_not_found(const std::string& model) {
    return ApiError{
        404, "The model `" + model + "` does not exist.", "invalid_request_error", "model", "model_not_found",
        {}};
}

ApiError unauthorized() {
    return ApiError{401, "Incorrect API key provided.", "invalid_request_error", "", "invalid_api_key", {}};
}

ApiError too_many_requests(int64_t limit) {
    return ApiError{429,
                    fmt::format("The server is busy: more than {} requests are waiting. Retry later.", limit),
                    "rate_limit_error",
                    "",
                    "queue_full",
                    {{"Retry-After", "1"}}};
}

ApiError payload_too_large(size_t limit_bytes) {
    return ApiError{413,
                    fmt::format("The request body is larger than this server's limit of {} bytes ({} MiB; "
                                "lmrun serve --max-request-body-mb).",
                                limit_bytes, double(limit_bytes) / double(1 << 20)),
                    "invalid_request_error",
                    "",
                    "request_too_large",
                    {}};
}

ApiError unsupported_media_type(const std::string& content_encoding) {
    // RFC 7694: a server that refuses a content coding lists the ones it accepts.
    return ApiError{
        415,
        "Content-Encoding `" + content_encoding + "` is not supported: send the request body uncompressed.",
        "invalid_request_error",
        "",
        "unsupported_content_encoding",
        {{"Accept-Encoding", "identity"}}};
}

ApiError unavailable(std::string message) {
    return ApiError{503, std::move(message), "server_error", "", "service_unavailable", {}};
}

ApiError internal_error(std::string message) {
    return ApiError{500, std::move(message), "server_error", "", "internal_error", {}};
}

HttpResponse error_response(const ApiError& error) {
    HttpResponse response;
    response.status = error.status;
    response.content_type = "application/json";
    // Messages may quote request text: invalid UTF-8 becomes U+FFFD instead of throwing.
    response.body = error.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    response.headers = error.headers;
    return response;
}

std::string field_of_message(const std::string& message) {
    size_t end = 0;
    while (end < message.size() &&
           (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '_'))
        ++end;
    return message.substr(0, end);
}

}  // namespace lmrun::server
