// GET /v1/models, POST /tokenize, POST /detokenize (vLLM's shapes), and the
// helpers every endpoint uses to answer.
#include <chrono>
#include <random>

#include <fmt/format.h>

#include "server/endpoint_context.h"

namespace lmrun::server {

void send_json(httplib::Response& res, const Json& body, int status) {
    res.status = status;
    res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) {
    send_json(res, error.to_json(), error.status);
}

bool parse_body(const httplib::Request& req, httplib::Response& res, Json& body) {
    body = Json::parse(req.body, nullptr, false);
    if (body.is_discarded()) {
        send_error(res, invalid_request("the request body is not valid JSON"));
        return false;
    }
    if (!body.is_object()) {
        send_error(res, invalid_request("the request body must be a JSON object"));
        return false;
    }
    return true;
}

bool check_model(const EndpointContext& context, const std::string& model, httplib::Response& res) {
    const ModelInfo& info = context.prompts.info();
    if (model.empty() || model == info.served_name || model == info.model_dir) return true;
    send_error(res, model_not_found(model));
    return false;
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

void handle_models(EndpointContext& context, const httplib::Request&, httplib::Response& res) {
    const ModelInfo& info = context.prompts.info();
    Json model = {{"id", info.served_name},
                  {"object", "model"},
                  {"created", info.created_unix},
                  {"owned_by", "lmrun"},
                  {"root", info.model_dir},
                  {"parent", nullptr},
                  {"max_model_len", info.max_model_len},
                  {"permission", Json::array()}};
    send_json(res, Json{{"object", "list"}, {"data", Json::array({model})}});
}

namespace {

// {"prompt": ...} or {"messages": [...]} -> token ids, as /tokenize takes them.
std::optional<ApiError> tokenize_body(const EndpointContext& context, const Json& body,
                                      std::vector<int32_t>& ids) {
    if (body.contains("messages")) {
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

}  // namespace

void handle_tokenize(EndpointContext& context, const httplib::Request& req, httplib::Response& res) {
    Json body;
    if (!parse_body(req, res, body)) return;
    if (body.contains("model") && body["model"].is_string() &&
        !check_model(context, body["model"].get<std::string>(), res)) {
        return;
    }
    std::vector<int32_t> ids;
    if (auto error = tokenize_body(context, body, ids)) return send_error(res, *error);
    Json response = {
        {"count", ids.size()}, {"max_model_len", context.prompts.info().max_model_len}, {"tokens", ids}};
    if (body.value("return_token_strs", false)) {
        Json strings = Json::array();
        for (int32_t id : ids) strings.push_back(context.prompts.token_text(id));
        response["token_strs"] = std::move(strings);
    } else {
        response["token_strs"] = nullptr;
    }
    send_json(res, response);
}

void handle_detokenize(EndpointContext& context, const httplib::Request& req, httplib::Response& res) {
    Json body;
    if (!parse_body(req, res, body)) return;
    if (!body.contains("tokens") || !body["tokens"].is_array()) {
        return send_error(res, invalid_request("tokens must be an array of token ids", "tokens"));
    }
    std::vector<int32_t> ids;
    for (const Json& item : body["tokens"]) {
        if (!item.is_number_integer() || item.get<int64_t>() < 0 ||
            item.get<int64_t>() >= context.prompts.info().vocab_size) {
            return send_error(res,
                              invalid_request("tokens must be token ids within the vocabulary", "tokens"));
        }
        ids.push_back(item.get<int32_t>());
    }
    if (!context.prompts.tokenizer())
        return send_error(res, invalid_request("this model has no tokenizer", "tokens"));
    send_json(res, Json{{"prompt", context.prompts.decode(ids, false)}});
}

}  // namespace lmrun::server
