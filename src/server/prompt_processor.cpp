#include "server/prompt_processor.h"

#include <algorithm>

#include <fmt/format.h>

#include "engine/prompt_check.h"

namespace lmrun::server {
namespace {

// The longest token string in bytes. A token never stands for more input bytes than its own
// string holds (byte-level BPE maps each byte to one or two; SentencePiece's "▁" is three
// bytes for one space; a byte-fallback token is six for one).
size_t longest_token_bytes(const Tokenizer* tokenizer) {
    size_t longest = 1;
    if (!tokenizer) return longest;
    for (int32_t id = 0; id < tokenizer->vocab_size(); ++id)
        longest = std::max(longest, tokenizer->id_to_token(id).size());
    return longest;
}

}  // namespace

PromptProcessor::PromptProcessor(const Tokenizer* tokenizer, std::optional<ChatTemplate> chat_template,
                                 ModelInfo info)
    : tokenizer_(tokenizer),
      chat_template_(std::move(chat_template)),
      info_(std::move(info)),
      max_text_bytes_(size_t(std::max<int64_t>(info_.max_model_len, 1)) * longest_token_bytes(tokenizer) *
                      kNormalizationSlack) {}

std::optional<ApiError> PromptProcessor::check_text_size(size_t num_bytes, const char* field) const {
    if (num_bytes <= max_text_bytes_) return std::nullopt;
    return invalid_request(
        fmt::format("This model's maximum context length is {} tokens; a {} of {} bytes cannot "
                    "fit in it (at most {} bytes can). Please reduce the length of the input.",
                    info_.max_model_len, field, num_bytes, max_text_bytes_),
        field);
}

std::optional<ApiError> PromptProcessor::encode_prompt(const PromptInput& prompt, bool add_special_tokens,
                                                       std::vector<int32_t>& ids) const {
    if (prompt.is_token_ids) {
        ids = prompt.token_ids;
        return std::nullopt;
    }
    if (!tokenizer_)
        return invalid_request("this model has no tokenizer: send prompts as token ids", "prompt");
    if (auto error = check_text_size(prompt.text.size(), "prompt")) return error;
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
    if (!rendered.ok()) {
        // The template refused these messages (raise_exception, a limit): the request's fault, unless the
        // error says otherwise.
        Error error = rendered.error();
        error.message = "chat template: " + error.message;
        error.subject = "messages";
        return api_error_from(error);
    }
    text = std::move(rendered).value();
    return std::nullopt;
}

std::optional<ApiError> PromptProcessor::encode_chat(const ChatRequest& request,
                                                     std::vector<int32_t>& ids) const {
    std::string text;
    if (auto error = render_chat(request.messages, request.template_options, text)) return error;
    if (auto error = check_text_size(text.size(), "messages")) return error;
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
    // Written as a difference: max_tokens may be as large as the request's range allows.
    if (max_tokens_given && params.max_tokens > max_len - num_prompt_tokens) {
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
