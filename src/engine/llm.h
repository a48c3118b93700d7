// The offline API, as vLLM's LLM class presents it:
//   auto llm = LLM::create(model_dir, options);
//   auto outputs = llm->generate({Prompt::text("Once upon a time")}, params);
// Prompts are text, token ids, or chat conversations (rendered with the model's
// chat template). generate() runs the engine until every request finished and
// shows a progress bar on stderr.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/llm_engine.h"
#include "tokenizer/chat_template.h"

namespace lmrun {

struct Prompt {
    std::string text;  // used when token_ids is empty
    std::vector<int32_t> token_ids;
    static Prompt from_text(std::string text) { return Prompt{std::move(text), {}}; }
    static Prompt from_ids(std::vector<int32_t> ids) { return Prompt{{}, std::move(ids)}; }
};

struct GenerateOptions {
    bool show_progress = true;
    bool add_special_tokens = true;  // BOS for Llama-style tokenizers
};

class LLM {
  public:
    static Result<std::unique_ptr<LLM>> create(const EngineConfig& config);

    // One SamplingParams for all prompts, or one per prompt.
    Result<std::vector<RequestOutput>> generate(const std::vector<Prompt>& prompts,
                                                const SamplingParams& params,
                                                const GenerateOptions& options = {});
    Result<std::vector<RequestOutput>> generate(const std::vector<Prompt>& prompts,
                                                const std::vector<SamplingParams>& params,
                                                const GenerateOptions& options = {});
    // Conversations: arrays of {"role", "content"} messages.
    Result<std::vector<RequestOutput>> chat(const std::vector<nlohmann::json>& conversations,
                                            const SamplingParams& params,
                                            const ChatTemplateOptions& template_options = {},
                                            const GenerateOptions& options = {});

    // Text → ids as generate() would do it.
    Result<std::vector<int32_t>> encode_prompt(const Prompt& prompt, bool add_special_tokens) const;
    // Renders a conversation with the model's chat template.
    Result<std::string> render_chat(const nlohmann::json& messages, const ChatTemplateOptions& options) const;

    // Replaces the tokenizer's chat template (e.g. --chat-template FILE).
    void set_chat_template(ChatTemplate chat_template) { chat_template_ = std::move(chat_template); }
    bool has_chat_template() const { return chat_template_.has_value(); }

    LLMEngine& engine() { return *engine_; }

  private:
    std::unique_ptr<LLMEngine> engine_;
    std::optional<ChatTemplate> chat_template_;
};

}  // namespace lmrun
