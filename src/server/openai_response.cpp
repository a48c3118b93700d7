#include "server/openai_response.h"

namespace lmrun::server {

Json usage_json(const Usage& usage) {
    Json json = {{"prompt_tokens", usage.prompt_tokens},
                 {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
                 {"completion_tokens", usage.completion_tokens}};
    json["prompt_tokens_details"] = {{"cached_tokens", usage.cached_tokens}};
    return json;
}

Json finish_reason_json(FinishReason reason) {
    if (reason == FinishReason::None) return nullptr;
    return to_string(reason);
}

Json stop_reason_json(const StopReason& reason) {
    if (const int32_t* token_id = std::get_if<int32_t>(&reason)) return *token_id;
    if (const std::string* stop = std::get_if<std::string>(&reason)) return *stop;
    return nullptr;
}

Json completion_logprobs(std::span<const TokenLogprob> logprobs, const TokenTextFn& token_text,
                         int64_t first_offset) {
    Json tokens = Json::array(), token_logprobs = Json::array(), top_logprobs = Json::array(),
         offsets = Json::array();
    int64_t offset = first_offset;
    for (const TokenLogprob& entry : logprobs) {
        std::string text = token_text(entry.token_id);
        tokens.push_back(text);
        token_logprobs.push_back(entry.logprob);
        Json top = Json::object();
        for (const auto& [id, logprob] : entry.top) top[token_text(id)] = logprob;
        top_logprobs.push_back(std::move(top));
        offsets.push_back(offset);
        offset += int64_t(text.size());
    }
    return {{"text_offset", std::move(offsets)},
            {"token_logprobs", std::move(token_logprobs)},
            {"tokens", std::move(tokens)},
            {"top_logprobs", std::move(top_logprobs)}};
}

namespace {

Json token_entry(const std::string& text, float logprob) {
    Json bytes = Json::array();
    for (unsigned char byte : text) bytes.push_back(int(byte));
    return {{"token", text}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}

Json header_fields(const ResponseHeader& header, const char* object) {
    return {{"id", header.id}, {"object", object}, {"created", header.created}, {"model", header.model}};
}

}  // namespace

Json chat_logprobs(std::span<const TokenLogprob> logprobs, const TokenTextFn& token_text) {
    Json content = Json::array();
    for (const TokenLogprob& entry : logprobs) {
        Json item = token_entry(token_text(entry.token_id), entry.logprob);
        Json top = Json::array();
        for (const auto& [id, logprob] : entry.top) top.push_back(token_entry(token_text(id), logprob));
        item["top_logprobs"] = std::move(top);
        content.push_back(std::move(item));
    }
    return {{"content", std::move(content)}};
}

namespace {

// The fields every choice has, in OpenAI's order; `content_key` is "text", "message" or "delta".
Json choice_fields(int32_t index, const char* content_key, Json content, Json logprobs, FinishReason reason) {
    return {{"index", index},
            {content_key, std::move(content)},
            {"logprobs", std::move(logprobs)},
            {"finish_reason", finish_reason_json(reason)}};
}

Json whole_response(const ResponseHeader& header, const char* object, Json choices, const Usage& usage) {
    Json json = header_fields(header, object);
    json["choices"] = std::move(choices);
    json["usage"] = usage_json(usage);
    return json;
}

Json one_choice_chunk(const ResponseHeader& header, const char* object, Json choice, bool include_usage) {
    Json json = header_fields(header, object);
    json["choices"] = Json::array({std::move(choice)});
    if (include_usage) json["usage"] = nullptr;
    return json;
}

}  // namespace

Json completion_choice(int32_t index, const std::string& text, Json logprobs, FinishReason reason,
                       Json stop_reason) {
    Json choice = choice_fields(index, "text", text, std::move(logprobs), reason);
    choice["stop_reason"] = std::move(stop_reason);
    return choice;
}

Json completion_response(const ResponseHeader& header, Json choices, const Usage& usage) {
    return whole_response(header, "text_completion", std::move(choices), usage);
}

Json completion_chunk(const ResponseHeader& header, int32_t index, const std::string& text, Json logprobs,
                      FinishReason reason, bool include_usage) {
    return one_choice_chunk(header, "text_completion",
                            choice_fields(index, "text", text, std::move(logprobs), reason), include_usage);
}

Json chat_choice(int32_t index, const std::string& content, Json logprobs, FinishReason reason,
                 Json stop_reason) {
    Json message = {{"role", "assistant"}, {"content", content}};
    Json choice = choice_fields(index, "message", std::move(message), std::move(logprobs), reason);
    choice["stop_reason"] = std::move(stop_reason);
    return choice;
}

Json chat_response(const ResponseHeader& header, Json choices, const Usage& usage) {
    return whole_response(header, "chat.completion", std::move(choices), usage);
}

Json chat_chunk(const ResponseHeader& header, int32_t index, Json delta, Json logprobs, FinishReason reason,
                bool include_usage) {
    return one_choice_chunk(header, "chat.completion.chunk",
                            choice_fields(index, "delta", std::move(delta), std::move(logprobs), reason),
                            include_usage);
}

Json usage_chunk(const ResponseHeader& header, const char* object, const Usage& usage) {
    Json json = header_fields(header, object);
    json["choices"] = Json::array();
    json["usage"] = usage_json(usage);
    return json;
}

std::string dump_json(const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string sse_event(const Json& value) {
    return "data: " + dump_json(value) + "\n\n";
}

std::string sse_done() {
    return "data: [DONE]\n\n";
}

}  // namespace lmrun::server
