#include "server/api_error.h"

#include <cctype>

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

ApiError invalid_request(std::string message, std::string param) {
    return ApiError{400, std::move(message), "invalid_request_error", std::move(param), ""};
}

ApiError model_not_found(const std::string& model) {
    return ApiError{404, "The model `" + model + "` does not exist.", "invalid_request_error", "model",
                    "model_not_found"};
}

ApiError unauthorized() {
    return ApiError{401, "Incorrect API key provided.", "invalid_request_error", "", "invalid_api_key"};
}

ApiError too_many_requests(int64_t limit) {
    return ApiError{
        429, "The server is busy: more than " + std::to_string(limit) + " requests are waiting. Retry later.",
        "rate_limit_error", "", "queue_full"};
}

ApiError unavailable(std::string message) {
    return ApiError{503, std::move(message), "server_error", "", "service_unavailable"};
}

ApiError internal_error(std::string message) {
    return ApiError{500, std::move(message), "server_error", "", ""};
}

std::string field_of_message(const std::string& message) {
    size_t end = 0;
    while (end < message.size() &&
           (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '_'))
        ++end;
    return message.substr(0, end);
}

}  // namespace lmrun::server
