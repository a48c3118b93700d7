#include "server/chat_output_parser.h"

#include "server/openai_response.h"

namespace lmrun::server {
namespace {

using Json = nlohmann::ordered_json;

Json tool_call_delta_json(const ToolCallDelta& delta) {
    Json function = Json::object();
    if (!delta.name.empty()) function["name"] = delta.name;
    function["arguments"] = delta.arguments;
    Json call = {{"index", delta.index}};
    if (!delta.id.empty()) {
        call["id"] = delta.id;
        call["type"] = "function";
    }
    call["function"] = std::move(function);
    return call;
}

}  // namespace

ChatOutputParser::ChatOutputParser(const ChatOutputOptions& options)
    : options_(options),
      reasoning_parser_(options.reasoning && options.thinking),
      tools_(options.tool_choice, options.tool_call_format, options.function_name) {}

ChatDelta ChatOutputParser::take(ReasoningSplit split, bool final) {
    ChatDelta delta;
    delta.reasoning = std::move(split.reasoning);
    AnswerDelta answer = tools_.push(split.answer);
    if (final) {
        AnswerDelta rest = tools_.finish();
        answer.content += rest.content;
        answer.tool_calls.insert(answer.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
    }
    delta.content = std::move(answer.content);
    delta.tool_calls = std::move(answer.tool_calls);
    reasoning_ += delta.reasoning;
    content_ += delta.content;
    return delta;
}

ChatDelta ChatOutputParser::push(std::string_view text) {
    return take(reasoning_parser_.push(text), false);
}

ChatDelta ChatOutputParser::finish() {
    return take(reasoning_parser_.finish(), true);
}

Json ChatOutputParser::delta_json(const ChatDelta& delta) const {
    Json out = Json::object();
    if (!delta.reasoning.empty()) out["reasoning_content"] = delta.reasoning;
    if (!delta.content.empty()) out["content"] = delta.content;
    if (!delta.tool_calls.empty()) {
        Json calls = Json::array();
        for (const ToolCallDelta& call : delta.tool_calls) calls.push_back(tool_call_delta_json(call));
        out["tool_calls"] = std::move(calls);
    }
    return out;
}

Json ChatOutputParser::message_json() const {
    Json message = {{"role", "assistant"}};
    // OpenAI: content is null when the message only calls tools.
    message["content"] = content_.empty() && has_tool_calls() ? Json(nullptr) : Json(content_);
    if (options_.reasoning)
        message["reasoning_content"] = reasoning_.empty() ? Json(nullptr) : Json(reasoning_);
    if (has_tool_calls()) {
        Json calls = Json::array();
        for (const ToolCall& call : tools_.calls()) {
            calls.push_back({{"id", call.id},
                             {"type", "function"},
                             {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        }
        message["tool_calls"] = std::move(calls);
    }
    return message;
}

Json ChatOutputParser::finish_reason(FinishReason reason) const {
    if (reason == FinishReason::Stop && has_tool_calls()) return "tool_calls";
    return finish_reason_json(reason);
}

}  // namespace lmrun::server
