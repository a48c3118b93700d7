// OpenAI response bodies: completion and chat completion objects, their
// streaming chunks, usage, logprobs, and the Server-Sent Events framing
// ("data: {json}\n\n", ending with "data: [DONE]\n\n"). Pure functions of
// their inputs; token texts come from a callback so they can be tested alone.
//
// Logprobs shapes:
//   completions: {"tokens": [str], "token_logprobs": [float], "top_logprobs": [{str: float}],
//                 "text_offset": [int]}  (offsets in bytes of the completion text)
//   chat:        {"content": [{"token", "logprob", "bytes": [int], "top_logprobs": [{"token", "logprob",
//   "bytes"}]}]}
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/request_output.h"

namespace lmrun::server {

using Json = nlohmann::ordered_json;
using TokenTextFn = std::function<std::string(int32_t)>;

struct ResponseHeader {
    std::string id;  // "cmpl-..." / "chatcmpl-..."
    std::string model;
    int64_t created = 0;  // unix seconds
};

struct Usage {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};

Json usage_json(const Usage& usage);
// "stop", "length", "abort", "error"; null while unfinished.
Json finish_reason_json(FinishReason reason);
// vLLM's stop_reason: the stop token id (a number), the stop string, or null (EOS, length, unfinished).
Json stop_reason_json(const StopReason& reason);

// text_offset counts from `first_offset` (the bytes of completion text before these tokens).
Json completion_logprobs(std::span<const TokenLogprob> logprobs, const TokenTextFn& token_text,
                         int64_t first_offset);
Json chat_logprobs(std::span<const TokenLogprob> logprobs, const TokenTextFn& token_text);

Json completion_choice(int32_t index, const std::string& text, Json logprobs, FinishReason reason,
                       Json stop_reason);
Json completion_response(const ResponseHeader& header, Json choices, const Usage& usage);
Json completion_chunk(const ResponseHeader& header, int32_t index, const std::string& text, Json logprobs,
                      FinishReason reason, bool include_usage);

Json chat_choice(int32_t index, const std::string& content, Json logprobs, FinishReason reason,
                 Json stop_reason);
Json chat_response(const ResponseHeader& header, Json choices, const Usage& usage);
// delta: {"role": "assistant", "content": ""} first, then {"content": text}.
Json chat_chunk(const ResponseHeader& header, int32_t index, Json delta, Json logprobs, FinishReason reason,
                bool include_usage);

// The last chunk of a stream with stream_options.include_usage: no choices, the usage.
Json usage_chunk(const ResponseHeader& header, const char* object, const Usage& usage);

// JSON text; invalid UTF-8 (a token that ends mid-character) becomes U+FFFD instead of throwing.
std::string dump_json(const Json& value);
std::string sse_event(const Json& value);
std::string sse_done();

}  // namespace lmrun::server
