#include "tokenizer/chat_template.h"

#include <fstream>

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/parser.h"
#include "tokenizer/tokenizer.h"

namespace lmrun {

const std::string& ChatTemplate::source() const {
    static const std::string kEmpty;
    return source_ ? *source_ : kEmpty;
}

namespace {

// The same error with `prefix: ` before its message; a syntax error in a template is the
// template's fault (Corrupt) unless it hit a limit.
Error prefixed(const Error& error, const std::string& prefix, ErrorKind syntax_kind) {
    const ErrorKind kind = error.kind == ErrorKind::InvalidArgument ? syntax_kind : error.kind;
    return Error{prefix + ": " + error.message, kind, error.subject};
}

}  // namespace

Result<ChatTemplate> ChatTemplate::parse(const std::string& source) {
    auto parsed = jinja::parse_template(source);
    if (!parsed.ok()) return prefixed(parsed.error(), "chat template", ErrorKind::Corrupt);
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
    auto corrupt = [&source_name](std::string message) {
        return with_subject(make_error(ErrorKind::Corrupt, "{}: {}", source_name, message), source_name);
    };
    if (!tokenizer_config.is_object() || !tokenizer_config.contains("chat_template"))
        return with_subject(make_error(ErrorKind::NotFound, "{}: no \"chat_template\"", source_name),
                            source_name);
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
        if (source == nullptr) return corrupt("\"chat_template\" list has no \"default\" entry");
    }
    if (source == nullptr || !source->is_string())
        return corrupt("\"chat_template\" must be a string or a list of {name, template}");
    auto parsed = parse(source->get<std::string>());
    if (!parsed.ok())
        return with_subject(prefixed(parsed.error(), source_name, ErrorKind::Corrupt), source_name);
    return parsed;
}

Result<ChatTemplate> ChatTemplate::from_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return with_subject(make_error(ErrorKind::NotFound, "{}: cannot open chat template", path), path);
    std::string source;
    char chunk[1 << 16];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
        source.append(chunk, size_t(in.gcount()));
        if (source.size() > jinja::kMaxTemplateBytes)
            return with_subject(make_error(ErrorKind::ResourceExhausted,
                                           "{}: chat template larger than the limit of {} bytes", path,
                                           jinja::kMaxTemplateBytes),
                                path);
    }
    auto parsed = parse(source);
    if (!parsed.ok()) return with_subject(prefixed(parsed.error(), path, ErrorKind::Corrupt), path);
    return parsed;
}

Result<std::optional<ChatTemplate>> load_chat_template(const std::string& template_file,
                                                       const nlohmann::json* tokenizer_config) {
    if (!template_file.empty()) {
        LMRUN_ASSIGN_OR_RETURN(ChatTemplate chat_template, ChatTemplate::from_file(template_file));
        return std::optional<ChatTemplate>(std::move(chat_template));
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
    jinja::Interpreter interpreter(context, options.limits);
    auto rendered = interpreter.render(*template_);
    // Errors the template raises about the conversation are the request's (InvalidArgument).
    if (!rendered.ok()) return prefixed(rendered.error(), "chat template", ErrorKind::InvalidArgument);
    return rendered;
}

}  // namespace lmrun
