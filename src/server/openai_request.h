// Parsing and validation of the OpenAI request bodies of /v1/completions and
// /v1/chat/completions into SamplingParams and prompts. Every field is
// type-checked; a wrong type or value gives an ApiError naming the field (400),
// so nothing invalid ever reaches the engine. Prompts are not tokenized here
// (see prompt_processor.h). Accepts the OpenAI names plus vLLM's extras
// (top_k, min_p, repetition_penalty, ignore_eos, min_tokens, stop_token_ids,
// skip_special_tokens, add_special_tokens, chat_template_kwargs, ...), the output
// constraints (structured_output_fields.h) and, for chat, tools (tool_request.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampling_params.h"
#include "server/api_error.h"
#include "server/structured_output_fields.h"
#include "server/tool_request.h"
#include "tokenizer/chat_template.h"

namespace lmrun::server {

// One prompt of /v1/completions: text, or token ids when `is_token_ids`.
struct PromptInput {
    std::string text;
    std::vector<int32_t> token_ids;
    bool is_token_ids = false;
};

// Fields shared by both endpoints.
struct GenerationRequest {
    std::string model;  // "" when the client sent none
    SamplingParams params;
    bool max_tokens_given = false;  // false: the endpoint's default applies (see prompt_processor.h)
    bool stream = false;
    bool include_usage = false;     // stream_options.include_usage
    bool return_token_ids = false;  // vLLM extension: choices carry token_ids (and prompt_token_ids)
    // response_format / structured_outputs / guided_*: read, not yet compiled (see completion_endpoints.cpp).
    std::optional<RequestedConstraint> constraint;
};

struct CompletionRequest : GenerationRequest {
    std::vector<PromptInput> prompts;  // "prompt": string, [string], [int], [[int]]
    bool echo = false;
    bool add_special_tokens = true;
};

struct ChatRequest : GenerationRequest {
    nlohmann::ordered_json messages;  // validated: [{role: string, content: string|parts|null, ...}]
    ChatTemplateOptions template_options;
    bool add_special_tokens = false;  // the template writes BOS itself
    bool logprobs = false;            // chat: logprobs=true, top_logprobs=N
    ToolRequest tools;                // tools, tool_choice, parallel_tool_calls
};

// Both return nullopt on success. `body` is the parsed JSON body.
std::optional<ApiError> parse_completion_request(const nlohmann::ordered_json& body,
                                                 CompletionRequest& request);
std::optional<ApiError> parse_chat_request(const nlohmann::ordered_json& body, ChatRequest& request);

}  // namespace lmrun::server
