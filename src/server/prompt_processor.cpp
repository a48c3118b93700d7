#include "server/prompt_processor.h"

#include <fmt/format.h>

#include "engine/prompt_check.h"

namespace lmrun::server {

PromptProcessor::PromptProcessor(const Tokenizer* tokenizer, std::optional<ChatTemplate> chat_template,
                                 ModelInfo info)
    : tokenizer_(tokenizer), chat_template_(std::move(chat_template)), info_(std::move(info)) {}

std::optional<ApiError> PromptProcessor::encode_prompt(const PromptInput& prompt, bool add_special_tokens,
                                                       std::vector<int32_t>& ids) const {
    if (prompt.is_token_ids) {
        ids = prompt.token_ids;
        return std::nullopt;
    }
    if (!tokenizer_)
        return invalid_request("this model has no tokenizer: send prompts as token ids", "prompt");
    ids = tokenizer_->encode(prompt.text, add_special_tokens);
    return std::nullopt;
}

std::optional<ApiError> PromptProcessor::render_chat(const nlohmann::ordered_json& messages,
                                                     const ChatTemplateOptions& options,
                                                     std::string& text) const {
    if (!tokenizer_) return invalid_request("this model has no tokenizer, so no chat", "messages");
    if (!chat_template_) {
        return invalid_request("this model has no chat template; start the server with --chat-template FILE",
                               "messages");
    }
    Result<std::string> rendered =
        chat_template_->apply(messages, options, tokenizer_->bos_token(), tokenizer_->eos_token());
    if (!rendered.ok()) return invalid_request("chat template: " + rendered.error().message, "messages");
    text = std::move(rendered).value();
    return std::nullopt;
}

std::optional<ApiError> PromptProcessor::encode_chat(const ChatRequest& request,
                                                     std::vector<int32_t>& ids) const {
    std::string text;
    if (auto error = render_chat(request.messages, request.template_options, text)) return error;
    ids = tokenizer_->encode(text, request.add_special_tokens);
    return std::nullopt;
}

std::optional<ApiError> PromptProcessor::fit_to_context(const std::vector<int32_t>& ids,
                                                        bool max_tokens_given, const char* prompt_field,
                                                        SamplingParams& params) const {
    // The engine's own checks (vocabulary, at least one token of room), reported on prompt_field.
    if (Status valid = check_prompt_ids(ids, info_.vocab_size, info_.max_model_len); !valid.ok())
        return invalid_request(valid.error().message, prompt_field);
    const int64_t num_prompt_tokens = int64_t(ids.size());
    const int64_t max_len = info_.max_model_len;
    if (max_tokens_given && num_prompt_tokens + params.max_tokens > max_len) {
        return invalid_request(
            fmt::format("This model's maximum context length is {} tokens. However, you requested "
                        "{} tokens ({} in the input, {} for the completion).",
                        max_len, num_prompt_tokens + params.max_tokens, num_prompt_tokens, params.max_tokens),
            "max_tokens");
    }
    params.max_tokens = std::min(params.max_tokens, max_len - num_prompt_tokens);
    if (Status valid = params.validate(); !valid.ok()) {
        return invalid_request(valid.error().message, field_of_message(valid.error().message));
    }
    return std::nullopt;
}

std::string PromptProcessor::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    if (!tokenizer_) return {};
    return tokenizer_->decode(ids, skip_special_tokens);
}

std::string PromptProcessor::token_text(int32_t id) const {
    if (!tokenizer_) return fmt::format("token_id:{}", id);
    const int32_t one[1] = {id};
    return tokenizer_->decode_chunk(one, false, false);
}

}  // namespace lmrun::server
