// Chat templates: renders a conversation into a prompt string with the Jinja
// `chat_template` of a Hugging Face tokenizer_config.json, byte for byte as
// transformers' apply_chat_template does (jinja2 with trim_blocks and
// lstrip_blocks, tojson = json.dumps(ensure_ascii=False), raise_exception).
//
// Context seen by the template: `messages`, `add_generation_prompt`,
// `bos_token`, `eos_token`, `tools` and `documents` (none unless given), plus
// every key of ChatTemplateOptions::extra_kwargs (e.g. enable_thinking, tools).
//
// Key order matters for `tojson` (tool schemas): Python keeps insertion order.
// nlohmann::json sorts object keys, so callers that need HF-identical output
// should parse requests as nlohmann::ordered_json and use those overloads.
//
// A ChatTemplate is immutable after parse and cheap to copy; apply() may be
// called from many threads at once.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "tokenizer/jinja/render_budget.h"

namespace lmrun {

namespace jinja {
struct Template;
}

struct ChatTemplateOptions {
    bool add_generation_prompt = true;
    // e.g. {"enable_thinking": false}, "tools": [...]; ordered to keep key order for tojson.
    nlohmann::ordered_json extra_kwargs = nlohmann::ordered_json::object();
    // Steps, bytes, output and depth one render may take (templates are untrusted).
    jinja::RenderLimits limits;
};

class ChatTemplate {
  public:
    // Compiles once; syntax errors name line and column.
    static Result<ChatTemplate> parse(const std::string& source);
    // Reads tokenizer_config.json's "chat_template": a string, or a list of
    // {name, template} entries from which "default" is taken.
    static Result<ChatTemplate> from_tokenizer_config(const nlohmann::json& tokenizer_config,
                                                      const std::string& source_name);
    static Result<ChatTemplate> from_tokenizer_config(const nlohmann::ordered_json& tokenizer_config,
                                                      const std::string& source_name);

    // messages: [{"role": ..., "content": ..., maybe "tool_calls", "reasoning_content"}].
    Result<std::string> apply(const nlohmann::json& messages, const ChatTemplateOptions& options,
                              const std::string& bos_token = "", const std::string& eos_token = "") const;
    Result<std::string> apply(const nlohmann::ordered_json& messages, const ChatTemplateOptions& options,
                              const std::string& bos_token = "", const std::string& eos_token = "") const;

    // A template file (e.g. --chat-template FILE): NotFound when it cannot be read,
    // ResourceExhausted past jinja::kMaxTemplateBytes, Corrupt when it does not parse;
    // errors name the file.
    static Result<ChatTemplate> from_file(const std::string& path);

    // Template text ("" for a default-constructed ChatTemplate, whose apply() fails).
    const std::string& source() const;

  private:
    std::shared_ptr<const std::string> source_;
    std::shared_ptr<const jinja::Template> template_;
};

// The one way a model's chat template is found (LLM, `lmrun chat`, `lmrun serve`): the text of
// `template_file` when one is given (ChatTemplate::from_file), else the "chat_template" of
// `tokenizer_config` (may be null), else none (std::nullopt).
Result<std::optional<ChatTemplate>> load_chat_template(const std::string& template_file,
                                                       const nlohmann::json* tokenizer_config);

}  // namespace lmrun
