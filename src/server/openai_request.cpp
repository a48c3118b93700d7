#include "server/openai_request.h"

#include <limits>

#include "server/request_fields.h"

namespace lmrun::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

#define LMRUN_RETURN_IF_API_ERROR(expr)                \
    do {                                               \
        if (MaybeError error_ = (expr)) return error_; \
    } while (0)

MaybeError read_stop(const Json& body, std::vector<std::string>& stop) {
    const Json* value = find_field(body, "stop");
    if (!value) return std::nullopt;
    if (value->is_string()) {
        stop = {value->get<std::string>()};
        return std::nullopt;
    }
    if (!value->is_array()) return wrong_type("stop", "a string or an array of strings");
    for (const Json& item : *value) {
        if (!item.is_string()) return wrong_type("stop", "a string or an array of strings");
        stop.push_back(item.get<std::string>());
    }
    return std::nullopt;
}

MaybeError read_stop_token_ids(const Json& body, std::vector<int32_t>& ids) {
    const Json* value = find_field(body, "stop_token_ids");
    if (!value) return std::nullopt;
    if (!value->is_array()) return wrong_type("stop_token_ids", "an array of integers");
    for (const Json& item : *value) {
        int64_t id = 0;
        if (!to_integer(item, id) || id < 0 || id > kInt32Max)
            return wrong_type("stop_token_ids", "an array of token ids in [0, 2147483647]");
        ids.push_back(int32_t(id));
    }
    return std::nullopt;
}

// Fields the engine cannot honour are refused rather than silently ignored.
MaybeError refuse_unsupported(const Json& body) {
    if (const Json* bias = find_field(body, "logit_bias"); bias && !(bias->is_object() && bias->empty())) {
        return invalid_request("logit_bias is not supported", "logit_bias");
    }
    if (const Json* suffix = find_field(body, "suffix");
        suffix && !(suffix->is_string() && suffix->get<std::string>().empty())) {
        return invalid_request("suffix is not supported", "suffix");
    }
    int64_t best_of = 1;
    LMRUN_RETURN_IF_API_ERROR(read_int(body, "best_of", 1, kInt32Max, best_of));
    if (best_of > 1) return invalid_request("best_of > 1 is not supported", "best_of");
    bool include_stop = false;
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "include_stop_str_in_output", include_stop));
    if (include_stop)
        return invalid_request("include_stop_str_in_output is not supported", "include_stop_str_in_output");
    return std::nullopt;
}

MaybeError read_stream_fields(const Json& body, GenerationRequest& request) {
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "stream", request.stream));
    if (const Json* options = find_field(body, "stream_options")) {
        if (!options->is_object()) return wrong_type("stream_options", "an object");
        LMRUN_RETURN_IF_API_ERROR(read_bool(*options, "include_usage", request.include_usage));
    }
    return std::nullopt;
}

MaybeError read_sampling_fields(const Json& body, GenerationRequest& request) {
    SamplingParams& params = request.params;
    LMRUN_RETURN_IF_API_ERROR(read_float(body, "temperature", params.temperature));
    LMRUN_RETURN_IF_API_ERROR(read_float(body, "top_p", params.top_p));
    LMRUN_RETURN_IF_API_ERROR(read_float(body, "min_p", params.min_p));
    LMRUN_RETURN_IF_API_ERROR(read_int(body, "top_k", -1, kInt32Max, params.top_k));
    LMRUN_RETURN_IF_API_ERROR(read_float(body, "repetition_penalty", params.repetition_penalty));
    LMRUN_RETURN_IF_API_ERROR(read_float(body, "presence_penalty", params.presence_penalty));
    LMRUN_RETURN_IF_API_ERROR(read_float(body, "frequency_penalty", params.frequency_penalty));
    LMRUN_RETURN_IF_API_ERROR(read_int(body, "n", 1, 128, params.n));
    LMRUN_RETURN_IF_API_ERROR(read_int(body, "min_tokens", 0, kInt32Max, params.min_tokens));
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "ignore_eos", params.ignore_eos));
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "skip_special_tokens", params.skip_special_tokens));
    LMRUN_RETURN_IF_API_ERROR(read_stop(body, params.stop));
    LMRUN_RETURN_IF_API_ERROR(read_stop_token_ids(body, params.stop_token_ids));
    int64_t seed = 0;
    bool seed_given = false;
    LMRUN_RETURN_IF_API_ERROR(read_int(body, "seed", kInt64Min, kInt64Max, seed, &seed_given));
    if (seed_given) params.seed = uint64_t(seed);
    LMRUN_RETURN_IF_API_ERROR(read_string(body, "model", request.model));
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "return_token_ids", request.return_token_ids));
    LMRUN_RETURN_IF_API_ERROR(refuse_unsupported(body));
    LMRUN_RETURN_IF_API_ERROR(read_structured_outputs(body, request.constraint));
    return read_stream_fields(body, request);
}

// The engine's own check, with the field it names reported as `param`.
MaybeError validate_params(const SamplingParams& params, const char* logprobs_field) {
    Status valid = params.validate();
    if (valid.ok()) return std::nullopt;
    std::string message = valid.error().message;
    std::string field = field_of_message(message);
    if (field == "logprobs" && std::string(logprobs_field) != "logprobs") {
        message.replace(0, field.size(), logprobs_field);
        field = logprobs_field;
    }
    return invalid_request(message, field);
}

MaybeError read_token_ids(const Json& array, std::vector<int32_t>& ids) {
    for (const Json& item : array) {
        int64_t id = 0;
        if (!to_integer(item, id) || id < 0 || id > kInt32Max)
            return invalid_request("prompt token ids must be integers in [0, 2147483647]", "prompt");
        ids.push_back(int32_t(id));
    }
    if (ids.empty()) return invalid_request("prompt must not be empty", "prompt");
    return std::nullopt;
}

MaybeError read_prompts(const Json& body, std::vector<PromptInput>& prompts) {
    const Json* prompt = find_field(body, "prompt");
    const char* expected =
        "a string, an array of strings, an array of token ids or an array of token id arrays";
    if (!prompt) return invalid_request("prompt is required", "prompt");
    if (prompt->is_string()) {
        prompts.push_back(PromptInput{prompt->get<std::string>(), {}, false});
        return std::nullopt;
    }
    if (!prompt->is_array() || prompt->empty()) return wrong_type("prompt", expected);
    const Json& first = prompt->front();
    if (first.is_number()) {
        PromptInput input{{}, {}, true};
        LMRUN_RETURN_IF_API_ERROR(read_token_ids(*prompt, input.token_ids));
        prompts.push_back(std::move(input));
        return std::nullopt;
    }
    for (const Json& item : *prompt) {
        if (item.is_string() && first.is_string()) {
            prompts.push_back(PromptInput{item.get<std::string>(), {}, false});
        } else if (item.is_array() && first.is_array()) {
            PromptInput input{{}, {}, true};
            LMRUN_RETURN_IF_API_ERROR(read_token_ids(item, input.token_ids));
            prompts.push_back(std::move(input));
        } else {
            return wrong_type("prompt", expected);
        }
    }
    return std::nullopt;
}

MaybeError read_completion_request(const Json& body, CompletionRequest& request) {
    if (!body.is_object()) return invalid_request("the request body must be a JSON object");
    LMRUN_RETURN_IF_API_ERROR(read_prompts(body, request.prompts));
    request.params.max_tokens = 16;  // OpenAI's default for completions
    LMRUN_RETURN_IF_API_ERROR(
        read_int(body, "max_tokens", 1, kInt32Max, request.params.max_tokens, &request.max_tokens_given));
    LMRUN_RETURN_IF_API_ERROR(read_sampling_fields(body, request));
    int32_t logprobs = 0;
    bool logprobs_given = false;
    LMRUN_RETURN_IF_API_ERROR(read_int(body, "logprobs", 0, 20, logprobs, &logprobs_given));
    if (logprobs_given) request.params.logprobs = logprobs;
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "echo", request.echo));
    if (request.echo && request.params.logprobs) {
        return invalid_request("echo together with logprobs is not supported", "echo");
    }
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "add_special_tokens", request.add_special_tokens));
    return validate_params(request.params, "logprobs");
}

// Content parts [{"type": "text", "text": ...}] are joined into one string, as vLLM does for text-only
// models.
MaybeError normalize_content(Json& message, size_t index) {
    const std::string param = "messages[" + std::to_string(index) + "].content";
    auto content = message.find("content");
    if (content == message.end() || content->is_null() || content->is_string()) return std::nullopt;
    if (!content->is_array()) return wrong_type(param, "a string or an array of content parts");
    std::string text;
    for (const Json& part : *content) {
        const Json* type = find_field(part, "type");
        const Json* part_text = find_field(part, "text");
        if (!type || !type->is_string() || type->get<std::string>() != "text" || !part_text ||
            !part_text->is_string()) {
            return invalid_request(param + ": only parts {\"type\": \"text\", \"text\": ...} are supported",
                                   param);
        }
        if (!text.empty()) text += "\n";
        text += part_text->get<std::string>();
    }
    *content = text;
    return std::nullopt;
}

MaybeError read_messages(const Json& body, Json& messages) {
    const Json* value = find_field(body, "messages");
    if (!value) return invalid_request("messages is required", "messages");
    if (!value->is_array() || value->empty()) return wrong_type("messages", "a non-empty array of messages");
    messages = *value;
    for (size_t i = 0; i < messages.size(); ++i) {
        Json& message = messages[i];
        const std::string param = "messages[" + std::to_string(i) + "]";
        if (!message.is_object()) return wrong_type(param, "an object");
        const Json* role = find_field(message, "role");
        if (!role || !role->is_string()) return wrong_type(param + ".role", "a string");
        LMRUN_RETURN_IF_API_ERROR(normalize_content(message, i));
        // An assistant turn that only called tools comes with content null; templates
        // (Qwen3's among them) test it as a string.
        if (*role == Json("assistant") && (!message.contains("content") || message["content"].is_null()))
            message["content"] = "";
    }
    return std::nullopt;
}

MaybeError read_template_options(const Json& body, ChatRequest& request) {
    ChatTemplateOptions& options = request.template_options;
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "add_generation_prompt", options.add_generation_prompt));
    bool continue_final = false;
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "continue_final_message", continue_final));
    if (continue_final)
        return invalid_request("continue_final_message is not supported", "continue_final_message");
    if (const Json* kwargs = find_field(body, "chat_template_kwargs")) {
        if (!kwargs->is_object()) return wrong_type("chat_template_kwargs", "an object");
        options.extra_kwargs =
            *kwargs;  // a copy, linear (inserting key by key searches the object each time)
    }
    for (const char* key : {"tools", "documents"}) {
        if (const Json* value = find_field(body, key)) {
            if (!value->is_array()) return wrong_type(key, "an array");
            options.extra_kwargs[key] = *value;
        }
    }
    return read_bool(body, "add_special_tokens", request.add_special_tokens);
}

MaybeError read_chat_logprobs(const Json& body, ChatRequest& request) {
    LMRUN_RETURN_IF_API_ERROR(read_bool(body, "logprobs", request.logprobs));
    int32_t top_logprobs = 0;
    bool top_given = false;
    LMRUN_RETURN_IF_API_ERROR(read_int(body, "top_logprobs", 0, 20, top_logprobs, &top_given));
    if (top_given && !request.logprobs) {
        return invalid_request("top_logprobs requires logprobs to be true", "top_logprobs");
    }
    if (request.logprobs) request.params.logprobs = top_logprobs;
    return std::nullopt;
}

MaybeError read_chat_request(const Json& body, ChatRequest& request) {
    if (!body.is_object()) return invalid_request("the request body must be a JSON object");
    LMRUN_RETURN_IF_API_ERROR(read_messages(body, request.messages));
    LMRUN_RETURN_IF_API_ERROR(
        read_int(body, "max_tokens", 1, kInt32Max, request.params.max_tokens, &request.max_tokens_given));
    bool completion_given = false;
    LMRUN_RETURN_IF_API_ERROR(
        read_int(body, "max_completion_tokens", 1, kInt32Max, request.params.max_tokens, &completion_given));
    request.max_tokens_given = request.max_tokens_given || completion_given;
    // Without a limit the rest of the context is the limit; it is known after tokenizing.
    if (!request.max_tokens_given) request.params.max_tokens = std::numeric_limits<int32_t>::max();
    LMRUN_RETURN_IF_API_ERROR(read_sampling_fields(body, request));
    LMRUN_RETURN_IF_API_ERROR(read_chat_logprobs(body, request));
    LMRUN_RETURN_IF_API_ERROR(read_template_options(body, request));
    LMRUN_RETURN_IF_API_ERROR(read_tool_request(body, request.tools));
    if (MaybeError error = validate_params(request.params, "top_logprobs")) {
        if (error->param == "max_tokens" && completion_given) error->param = "max_completion_tokens";
        return error;
    }
    return std::nullopt;
}

// The readers above check every type before every access; should one ever miss, the JSON
// library's exception still becomes a 400 about the request, never a 500.
template <typename Request, typename Reader>
MaybeError read_guarded(const Json& body, Request& request, Reader reader) {
    try {
        return reader(body, request);
    } catch (const nlohmann::json::exception& error) {
        return invalid_request(std::string("the request does not have the expected shape: ") + error.what());
    }
}

}  // namespace

std::optional<ApiError> parse_completion_request(const Json& body, CompletionRequest& request) {
    return read_guarded(body, request, read_completion_request);
}

std::optional<ApiError> parse_chat_request(const Json& body, ChatRequest& request) {
    return read_guarded(body, request, read_chat_request);
}

}  // namespace lmrun::server
