// Tool calls out of a chat answer, as the text streams in. What the answer is
// depends on the request's tool choice:
//   none      - content only;
//   auto      - the model's own syntax, read tolerantly: --tool-call-parser hermes
//               (Qwen2.5 / Qwen3: <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//               blocks among content) or llama3_json (a {"name", "parameters"} JSON
//               object, or several separated by ";", optionally after <|python_tag|>).
//               Text that is not a well-formed call stays content;
//   named     - the whole answer is the arguments of the one named function;
//   required  - a JSON array of {"name", "parameters"} objects (the constrained form).
// Each push() returns what can be sent now: content, and per call a first delta
// with its id and name, then deltas of its arguments text (as OpenAI streams
// them). Content that could still turn out to be a call's syntax is held back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_request.h"

namespace lmrun::server {

enum class ToolCallFormat { Hermes, Llama3Json };

// "hermes", "llama3_json"; nullopt for any other name.
std::optional<ToolCallFormat> tool_call_format_named(std::string_view name);

struct ToolCallDelta {
    int32_t index = 0;      // position in message.tool_calls
    std::string id;         // first delta of a call only
    std::string name;       // first delta of a call only
    std::string arguments;  // more of the arguments (JSON text)
};

struct ToolCall {
    std::string id;
    std::string name;
    std::string arguments;
};

struct AnswerDelta {
    std::string content;
    std::vector<ToolCallDelta> tool_calls;
};

class ToolCallParser {
  public:
    ToolCallParser(ToolChoice choice, ToolCallFormat format, std::string function_name);

    AnswerDelta push(std::string_view text);
    AnswerDelta finish();
    const std::vector<ToolCall>& calls() const { return calls_; }

  private:
    AnswerDelta drain(bool final);
    void drain_named(bool final, AnswerDelta& out);
    void drain_required(AnswerDelta& out);
    void drain_hermes(bool final, AnswerDelta& out);
    void drain_llama3(bool final, AnswerDelta& out);
    void emit_content(std::string_view text, bool final, AnswerDelta& out);
    // Appends a whole call (id, name, arguments) to calls_ and to `out`.
    void add_call(std::string name, std::string arguments, AnswerDelta& out);

    ToolChoice choice_;
    ToolCallFormat format_;
    std::string function_name_;
    std::string text_;        // the answer so far
    size_t consumed_ = 0;     // text_[0, consumed_) is settled (sent or being a call)
    std::string held_space_;  // whitespace between calls, sent only if content follows
    bool in_call_ = false;    // hermes: inside <tool_call> ... </tool_call>
    bool llama3_decided_ = false;
    bool llama3_calls_ = false;
    std::vector<ToolCall> calls_;
    std::vector<size_t> sent_arguments_;  // per call: arguments bytes already sent (required)
};

// A new "call_" id: 24 random hex digits.
std::string make_tool_call_id();

}  // namespace lmrun::server
