#include "router/routing_input.h"

#include "core/json_io.h"

namespace lmrun::router {
namespace {

using Json = nlohmann::json;

constexpr char kFieldSeparator = '\x1f';
constexpr char kMessageSeparator = '\x1e';

// Token ids as text: "1,403,407," (a longer id list extends the text of its prefix).
void append_ids(const Json& ids, std::string& text, int64_t& num_tokens) {
    for (const Json& id : ids) {
        if (!id.is_number_integer()) continue;
        text += std::to_string(id.get<int64_t>());
        text += ',';
        ++num_tokens;
    }
}

void read_completion_prompt(const Json& body, RoutingInput& input) {
    auto prompt = body.find("prompt");
    if (prompt == body.end()) return;
    int64_t num_ids = 0;
    const Json* first = &*prompt;
    if (first->is_array() && !first->empty() && (first->front().is_string() || first->front().is_array()))
        first = &first->front();  // a batch: the first prompt
    if (first->is_string()) {
        input.prompt_text = first->get<std::string>();
    } else if (first->is_array()) {
        append_ids(*first, input.prompt_text, num_ids);
    }
    input.estimated_tokens = num_ids > 0 ? num_ids : int64_t(input.prompt_text.size() / 4) + 1;
}

void append_content(const Json& content, std::string& text) {
    if (content.is_string()) {
        text += content.get_ref<const std::string&>();
    } else if (content.is_array()) {
        for (const Json& part : content) {
            auto part_text = part.is_object() ? part.find("text") : part.end();
            if (part.is_object() && part_text != part.end() && part_text->is_string())
                text += part_text->get_ref<const std::string&>();
        }
    }
}

void read_chat_messages(const Json& body, RoutingInput& input) {
    auto messages = body.find("messages");
    if (messages == body.end() || !messages->is_array()) return;
    std::string& text = input.prompt_text;
    for (const Json& message : *messages) {
        if (!message.is_object()) continue;
        for (const char* field : {"role", "name"}) {
            auto value = message.find(field);
            if (value != message.end() && value->is_string()) text += value->get_ref<const std::string&>();
            text += kFieldSeparator;
        }
        if (auto content = message.find("content"); content != message.end()) append_content(*content, text);
        text += kMessageSeparator;
    }
    input.estimated_tokens = int64_t(text.size() / 4) + 1;
}

}  // namespace

RoutingInput read_routing_input(const server::HttpRequest& request) {
    RoutingInput input;
    input.session_key = std::string(request.header("x-session-id"));
    input.estimated_tokens = 1;
    if (request.method != "POST" || request.body.empty()) return input;
    Result<Json> body = parse_json(request.body, "request body");
    if (!body.ok() || !body->is_object()) return input;
    if (input.session_key.empty()) {
        auto user = body->find("user");
        if (user != body->end() && user->is_string()) input.session_key = user->get<std::string>();
    }
    if (request.path == "/v1/chat/completions")
        read_chat_messages(*body, input);
    else if (request.path == "/v1/completions")
        read_completion_prompt(*body, input);
    return input;
}

}  // namespace lmrun::router
