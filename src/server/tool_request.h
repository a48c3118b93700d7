// The tool-calling fields of a chat request (OpenAI): `tools` (function
// definitions, passed to the chat template), `tool_choice` ("none", "auto",
// "required" or {"type": "function", "function": {"name"}}) and
// `parallel_tool_calls`. With "required" or a named function the output is
// constrained, as vLLM does it: a named call generates the function's arguments
// (an object validating against its `parameters` schema); "required" generates a
// JSON array of {"name", "parameters"} objects, one schema branch per tool, at
// least one item (exactly one without parallel_tool_calls).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/request_fields.h"

namespace lmrun::server {

enum class ToolChoice { None, Auto, Required, Named };

struct ToolRequest {
    nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // validated function definitions
    ToolChoice choice = ToolChoice::None;
    std::string function_name;  // ToolChoice::Named
    bool parallel_tool_calls = true;
};

// Reads and checks tools / tool_choice / parallel_tool_calls. Without tool_choice,
// requests with tools default to "auto" (as OpenAI and vLLM do).
MaybeError read_tool_request(const nlohmann::ordered_json& body, ToolRequest& out);

// The JSON Schema a Required / Named tool choice constrains the output to.
nlohmann::ordered_json tool_call_schema(const ToolRequest& request);

}  // namespace lmrun::server
