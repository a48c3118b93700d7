#include "tokenizer/chat_template.h"

#include <fstream>
#include <sstream>

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/parser.h"

namespace lmrun {

const std::string& ChatTemplate::source() const {
    static const std::string kEmpty;
    return source_ ? *source_ : kEmpty;
}

Result<ChatTemplate> ChatTemplate::parse(const std::string& source) {
    auto parsed = jinja::parse_template(source);
    if (!parsed.ok()) return make_error("chat template: {}", parsed.error().message);
    ChatTemplate result;
    result.source_ = std::make_shared<const std::string>(source);
    result.template_ = std::shared_ptr<const jinja::Template>(std::move(parsed).value());
    return result;
}

Result<ChatTemplate> ChatTemplate::from_tokenizer_config(const nlohmann::json& tokenizer_config,
                                                         const std::string& source_name) {
    return from_tokenizer_config(nlohmann::ordered_json(tokenizer_config), source_name);
}

Result<ChatTemplate> ChatTemplate::from_tokenizer_config(const nlohmann::ordered_json& tokenizer_config,
                                                         const std::string& source_name) {
    if (!tokenizer_config.is_object() || !tokenizer_config.contains("chat_template"))
        return make_error("{}: no \"chat_template\"", source_name);
    const nlohmann::ordered_json& entry = tokenizer_config["chat_template"];
    const nlohmann::ordered_json* source = nullptr;
    if (entry.is_string()) {
        source = &entry;
    } else if (entry.is_array()) {
        for (const auto& named : entry) {
            if (named.is_object() && named.value("name", nlohmann::ordered_json()) == "default" &&
                named.contains("template"))
                source = &named["template"];
        }
        if (source == nullptr)
            return make_error("{}: \"chat_template\" list has no \"default\" entry", source_name);
    }
    if (source == nullptr || !source->is_string())
        return make_error("{}: \"chat_template\" must be a string or a list of {{name, template}}",
                          source_name);
    auto parsed = parse(source->get<std::string>());
    if (!parsed.ok()) return make_error("{}: {}", source_name, parsed.error().message);
    return parsed;
}

Result<std::optional<ChatTemplate>> load_chat_template(const std::string& template_file,
                                                       const nlohmann::json* tokenizer_config) {
    if (!template_file.empty()) {
        std::ifstream in(template_file, std::ios::binary);
        if (!in) return make_error(ErrorKind::NotFound, "{}: cannot open chat template", template_file);
        std::stringstream source;
        source << in.rdbuf();
        auto parsed = ChatTemplate::parse(source.str());
        if (!parsed.ok()) return make_error("{}: {}", template_file, parsed.error().message);
        return std::optional<ChatTemplate>(std::move(parsed).value());
    }
    if (tokenizer_config == nullptr || !tokenizer_config->contains("chat_template"))
        return std::optional<ChatTemplate>();
    LMRUN_ASSIGN_OR_RETURN(ChatTemplate chat_template,
                           ChatTemplate::from_tokenizer_config(*tokenizer_config, "tokenizer_config.json"));
    return std::optional<ChatTemplate>(std::move(chat_template));
}

Result<std::string> ChatTemplate::apply(const nlohmann::json& messages, const ChatTemplateOptions& options,
                                        const std::string& bos_token, const std::string& eos_token) const {
    return apply(nlohmann::ordered_json(messages), options, bos_token, eos_token);
}

Result<std::string> ChatTemplate::apply(const nlohmann::ordered_json& messages,
                                        const ChatTemplateOptions& options, const std::string& bos_token,
                                        const std::string& eos_token) const {
    if (!template_) return make_error("chat template: no template was parsed");
    if (!messages.is_array()) return make_error("chat template: messages must be a list");
    if (!options.extra_kwargs.is_object() && !options.extra_kwargs.is_null())
        return make_error("chat template: extra_kwargs must be an object");
    // Same context as transformers' apply_chat_template: tools/documents are None when absent.
    jinja::ValueDict context;
    auto messages_value = jinja::Value::from_json(messages);
    if (!messages_value.ok())
        return make_error("chat template: messages: {}", messages_value.error().message);
    context.set("messages", std::move(messages_value).value());
    context.set("tools", jinja::Value::none());
    context.set("documents", jinja::Value::none());
    context.set("add_generation_prompt", jinja::Value(options.add_generation_prompt));
    context.set("bos_token", jinja::Value(bos_token));
    context.set("eos_token", jinja::Value(eos_token));
    if (options.extra_kwargs.is_object()) {
        for (const auto& [key, value] : options.extra_kwargs.items()) {
            auto converted = jinja::Value::from_json(value);
            if (!converted.ok()) return make_error("chat template: {}: {}", key, converted.error().message);
            context.set(key, std::move(converted).value());
        }
    }
    jinja::Interpreter interpreter(context);
    auto rendered = interpreter.render(*template_);
    if (!rendered.ok()) return make_error("chat template: {}", rendered.error().message);
    return rendered;
}

}  // namespace lmrun
