// One chat completion's text as the OpenAI message it stands for: the reasoning
// (--reasoning-parser qwen3: message.reasoning_content), the content, and the
// tool calls (tool_call_parser.h). The same parser serves streamed responses
// (push() per engine delta gives the chunk's delta) and whole ones (push() of the
// whole text, then finish(), then message()).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sequence.h"
#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace lmrun::server {

struct ChatOutputOptions {
    bool reasoning = false;  // a reasoning parser is on: message.reasoning_content is reported
    bool thinking = false;   // and the prompt leaves the model to think first
    ToolChoice tool_choice = ToolChoice::None;
    ToolCallFormat tool_call_format = ToolCallFormat::Hermes;  // for ToolChoice::Auto
    std::string function_name;                                 // for ToolChoice::Named
};

struct ChatDelta {
    std::string reasoning;
    std::string content;
    std::vector<ToolCallDelta> tool_calls;
    bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

class ChatOutputParser {
  public:
    explicit ChatOutputParser(const ChatOutputOptions& options);

    ChatDelta push(std::string_view text);
    ChatDelta finish();

    // The streamed chunk's "delta" object (role not included).
    nlohmann::ordered_json delta_json(const ChatDelta& delta) const;
    // The whole message {"role", "content", ["reasoning_content"], ["tool_calls"]} (after finish()).
    nlohmann::ordered_json message_json() const;
    // "tool_calls" when the generation stopped with calls made, else the engine's reason.
    nlohmann::ordered_json finish_reason(FinishReason reason) const;
    bool has_tool_calls() const { return !tools_.calls().empty(); }

  private:
    ChatDelta take(ReasoningSplit split, bool final);

    ChatOutputOptions options_;
    ReasoningParser reasoning_parser_;
    ToolCallParser tools_;
    std::string reasoning_;
    std::string content_;
};

}  // namespace lmrun::server
