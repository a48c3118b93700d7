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

Json completion_choice(int32_t index, const std::string& text, Json logprobs, FinishReason reason,
                       Json stop_reason) {
    return {{"index", index},
            {"text", text},
            {"logprobs", std::move(logprobs)},
            {"finish_reason", finish_reason_json(reason)},
            {"stop_reason", std::move(stop_reason)}};
}

Json completion_response(const ResponseHeader& header, Json choices, const Usage& usage) {
    Json json = header_fields(header, "text_completion");
    json["choices"] = std::move(choices);
    json["usage"] = usage_json(usage);
    return json;
}

Json completion_chunk(const ResponseHeader& header, int32_t index, const std::string& text, Json logprobs,
                      FinishReason reason, bool include_usage) {
    Json json = header_fields(header, "text_completion");
    json["choices"] = Json::array({{{"index", index},
                                    {"text", text},
                                    {"logprobs", std::move(logprobs)},
                                    {"finish_reason", finish_reason_json(reason)}}});
    if (include_usage) json["usage"] = nullptr;
    return json;
}

Json chat_choice(int32_t index, const std::string& content, Json logprobs, FinishReason reason,
                 Json stop_reason) {
    return {{"index", index},
            {"message", {{"role", "assistant"}, {"content", content}}},
            {"logprobs", std::move(logprobs)},
            {"finish_reason", finish_reason_json(reason)},
            {"stop_reason", std::move(stop_reason)}};
}

Json chat_response(const ResponseHeader& header, Json choices, const Usage& usage) {
    Json json = header_fields(header, "chat.completion");
    json["choices"] = std::move(choices);
    json["usage"] = usage_json(usage);
    return json;
}

Json chat_chunk(const ResponseHeader& header, int32_t index, Json delta, Json logprobs, FinishReason reason,
                bool include_usage) {
    Json json = header_fields(header, "chat.completion.chunk");
    json["choices"] = Json::array({{{"index", index},
                                    {"delta", std::move(delta)},
                                    {"logprobs", std::move(logprobs)},
                                    {"finish_reason", finish_reason_json(reason)}}});
    if (include_usage) json["usage"] = nullptr;
    return json;
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
