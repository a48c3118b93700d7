// Turns a validated generation request (completions or chat) into its HTTP
// response: submits the prompts to the engine thread, then either answers with
// one JSON object once every final output arrived (built on a worker when the
// engine wakes it), or streams Server-Sent Events chunk by chunk as the engine
// produces tokens. No thread waits meanwhile. A client that goes away, streaming
// or not, has its requests aborted: their KV blocks are freed before the next
// engine step. Internal to src/server.
#pragma once

#include <string>
#include <vector>

#include "server/chat_output_parser.h"
#include "server/endpoint_context.h"

namespace lmrun::server {

enum class ApiKind { Completion, Chat };

struct GenerationPlan {
    ApiKind kind = ApiKind::Completion;
    ResponseHeader header;
    std::vector<EngineRequest> requests;  // one per prompt
    int32_t n = 1;
    bool stream = false;
    bool include_usage = false;
    bool logprobs = false;
    bool return_token_ids = false;
    std::vector<std::string> echo_prefixes;  // completions with echo: the prompt text, per prompt
    // Chat with a reasoning parser or tools: each choice's text becomes reasoning, content and tool calls.
    std::optional<ChatOutputOptions> chat_output;
};

void respond_generation(EndpointContext& context, GenerationPlan plan, const ExchangePtr& exchange);

}  // namespace lmrun::server
