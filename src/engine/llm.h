// The offline API, as vLLM's LLM class presents it. Prompts are text, token ids, or chat
// conversations (rendered with the model's chat template). generate() runs the engine until
// every request finished and shows a progress bar on stderr. In a function that returns a
// Result (tests/llm_usage_test.cpp compiles and runs the lines between the markers):
// usage-begin
//   EngineConfig config;
//   config.model_dir = model_dir;  // a Hugging Face checkpoint folder
//   auto llm = LLM::create(config);
//   if (!llm.ok()) return llm.error();
//   SamplingParams params;
//   params.temperature = 0;  // greedy
//   params.max_tokens = 32;
//   auto outputs = llm.value()->generate({Prompt::from_text("Once upon a time")}, params);
//   if (!outputs.ok()) return outputs.error();
//   std::string text = outputs.value()[0].outputs[0].text;  // prompt 0, completion 0
// usage-end
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

    // One SamplingParams for all prompts, or one per prompt; outputs[i] answers prompts[i].
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
    int64_t next_request_id_ = 0;  // engine request ids "offline-<n>", unique over this LLM's life
};

}  // namespace lmrun
