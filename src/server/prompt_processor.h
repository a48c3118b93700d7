// The HTTP-thread side of prompt handling: tokenizes completion prompts,
// renders chat conversations with the chat template, checks token ids against
// the vocabulary and the prompt against the context length, and settles
// max_tokens (a chat request without one gets the rest of the context). Text
// too long to fit the context whatever its tokens is refused before it is
// tokenized (tokenizing megabytes costs seconds for nothing). All of
// it is const and uses only the thread-safe Tokenizer / ChatTemplate, so many
// HTTP threads call it at once; the engine is never touched here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/openai_request.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace lmrun::server {

struct ModelInfo {
    std::string served_name;  // the `model` clients send
    std::string model_dir;
    int64_t max_model_len = 0;
    int64_t vocab_size = 0;
    int64_t created_unix = 0;  // start time, for /v1/models
    // Chat features of the served model (lmrun serve --reasoning-parser, --tool-call-parser,
    // --enable-auto-tool-choice): "" = off.
    std::string reasoning_parser;
    std::string tool_call_parser;
    bool enable_auto_tool_choice = false;
};

class PromptProcessor {
  public:
    // tokenizer may be null (token-id prompts only); chat_template may be empty (no chat).
    PromptProcessor(const Tokenizer* tokenizer, std::optional<ChatTemplate> chat_template, ModelInfo info);

    const ModelInfo& info() const { return info_; }
    const Tokenizer* tokenizer() const { return tokenizer_; }
    // Longer prompt text (or rendered chat) is refused before tokenizing: it cannot fit the context.
    size_t max_text_bytes() const { return max_text_bytes_; }

    std::optional<ApiError> encode_prompt(const PromptInput& prompt, bool add_special_tokens,
                                          std::vector<int32_t>& ids) const;
    std::optional<ApiError> render_chat(const nlohmann::ordered_json& messages,
                                        const ChatTemplateOptions& options, std::string& text) const;
    std::optional<ApiError> encode_chat(const ChatRequest& request, std::vector<int32_t>& ids) const;
    // Prompt within the context, ids within the vocabulary, max_tokens settled and re-validated.
    // `prompt_field` names the field reported on error ("prompt" or "messages").
    std::optional<ApiError> fit_to_context(const std::vector<int32_t>& ids, bool max_tokens_given,
                                           const char* prompt_field, SamplingParams& params) const;

    std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
    // The text of one token on its own, for logprobs ("token_id:N" without a tokenizer).
    std::string token_text(int32_t id) const;

  private:
    // Normalization may shrink text (NFC composes up to three code points into one); this much
    // slack keeps every text that could fit.
    static constexpr size_t kNormalizationSlack = 8;
    std::optional<ApiError> check_text_size(size_t num_bytes, const char* field) const;

    const Tokenizer* tokenizer_;
    std::optional<ChatTemplate> chat_template_;
    ModelInfo info_;
    size_t max_text_bytes_;  // max_model_len x the longest token's bytes x kNormalizationSlack
};

}  // namespace lmrun::server
