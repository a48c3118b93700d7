// GET /v1/models, POST /tokenize, POST /detokenize (vLLM's shapes), and the
// helpers every endpoint uses to answer.
#include <chrono>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "core/json_io.h"
#include "server/endpoint_context.h"
#include "server/request_fields.h"

namespace lmrun::server {

HttpResponse json_response(const Json& body, int status) {
    HttpResponse response;
    response.status = status;
    response.content_type = "application/json";
    response.body = dump_json(body);
    return response;
}

std::optional<ApiError> parse_body(const HttpRequest& request, Json& body) {
    JsonLimits limits;
    limits.max_bytes = std::numeric_limits<size_t>::max();  // the transport bounded the body already
    Result<Json> parsed = parse_ordered_json(request.body, "request body", limits);
    if (!parsed.ok()) {
        Error error = parsed.error();
        error.subject.clear();  // the body as a whole, not a field
        return api_error_from(error);
    }
    if (!parsed->is_object()) return invalid_request("the request body must be a JSON object");
    body = std::move(parsed).value();
    return std::nullopt;
}

std::optional<ApiError> check_model(const EndpointContext& context, const std::string& model) {
    const ModelInfo& info = context.prompts.info();
    if (model.empty() || model == info.served_name || model == info.model_dir) return std::nullopt;
    return model_not_found(model);
}

std::string make_request_id(const char* prefix) {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    return fmt::format("{}{:016x}{:016x}", prefix, generator(), generator());
}

int64_t unix_time_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

HttpResponse handle_models(EndpointContext& context, const HttpRequest&) {
    const ModelInfo& info = context.prompts.info();
    Json model = {{"id", info.served_name},
                  {"object", "model"},
                  {"created", info.created_unix},
                  {"owned_by", "lmrun"},
                  {"root", info.model_dir},
                  {"parent", nullptr},
                  {"max_model_len", info.max_model_len},
                  {"permission", Json::array()}};
    return json_response(Json{{"object", "list"}, {"data", Json::array({model})}});
}

namespace {

// {"prompt": ...} or {"messages": [...]} -> token ids, as /tokenize takes them.
std::optional<ApiError> tokenize_body(const EndpointContext& context, const Json& body,
                                      std::vector<int32_t>& ids) {
    if (find_field(body, "messages")) {
        ChatRequest chat;
        Json chat_body = body;
        chat_body.erase("prompt");
        if (auto error = parse_chat_request(chat_body, chat)) return error;
        return context.prompts.encode_chat(chat, ids);
    }
    CompletionRequest completion;
    if (auto error = parse_completion_request(body, completion)) return error;
    if (completion.prompts.size() != 1) return invalid_request("prompt must be a single prompt", "prompt");
    return context.prompts.encode_prompt(completion.prompts.front(), completion.add_special_tokens, ids);
}

// The body of a /tokenize or /detokenize request, whose "model" (optional) must be the served one.
std::optional<ApiError> parse_body_for_model(const EndpointContext& context, const HttpRequest& request,
                                             Json& body) {
    if (auto error = parse_body(request, body)) return error;
    std::string model;
    if (auto error = read_string(body, "model", model)) return error;
    return check_model(context, model);
}

}  // namespace

HttpResponse handle_tokenize(EndpointContext& context, const HttpRequest& request) {
    Json body;
    if (auto error = parse_body_for_model(context, request, body)) return error_response(*error);
    bool return_token_strs = false;
    if (auto error = read_bool(body, "return_token_strs", return_token_strs)) return error_response(*error);
    std::vector<int32_t> ids;
    if (auto error = tokenize_body(context, body, ids)) return error_response(*error);
    Json response = {
        {"count", ids.size()}, {"max_model_len", context.prompts.info().max_model_len}, {"tokens", ids}};
    if (return_token_strs) {
        Json strings = Json::array();
        for (int32_t id : ids) strings.push_back(context.prompts.token_text(id));
        response["token_strs"] = std::move(strings);
    } else {
        response["token_strs"] = nullptr;
    }
    return json_response(response);
}

HttpResponse handle_detokenize(EndpointContext& context, const HttpRequest& request) {
    Json body;
    if (auto error = parse_body_for_model(context, request, body)) return error_response(*error);
    const Json* tokens = find_field(body, "tokens");
    if (!tokens || !tokens->is_array())
        return error_response(invalid_request("tokens must be an array of token ids", "tokens"));
    std::vector<int32_t> ids;
    const int64_t vocab_size = context.prompts.info().vocab_size;
    for (const Json& item : *tokens) {
        int64_t id = 0;
        if (!to_integer(item, id) || id < 0 || id >= vocab_size) {
            return error_response(invalid_request(
                fmt::format("tokens must be token ids within the vocabulary [0, {})", vocab_size), "tokens"));
        }
        ids.push_back(int32_t(id));
    }
    if (!context.prompts.tokenizer())
        return error_response(invalid_request("this model has no tokenizer", "tokens"));
    return json_response(Json{{"prompt", context.prompts.decode(ids, false)}});
}

}  // namespace lmrun::server
