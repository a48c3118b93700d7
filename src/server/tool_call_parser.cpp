#include "server/tool_call_parser.h"

#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/tag_scan.h"
#include "structured/json_value_grammar.h"

namespace lmrun::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kCallStart = "<tool_call>";
constexpr std::string_view kCallEnd = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_tag_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_tag_space(text.back())) text.remove_suffix(1);
    return text;
}

// {"name": ..., "arguments" or "parameters": ...} -> (name, arguments JSON text).
std::optional<std::pair<std::string, std::string>> parse_call_object(std::string_view text) {
    Json call = Json::parse(trim(text), nullptr, /*allow_exceptions=*/false);
    if (call.is_discarded() || !call.is_object() || !call.contains("name") || !call["name"].is_string())
        return std::nullopt;
    Json arguments = Json::object();
    for (const char* key : {"arguments", "parameters"}) {
        if (call.contains(key)) arguments = call[key];
    }
    // Arguments sent as a JSON string stay that string's text.
    std::string text_arguments =
        arguments.is_string() ? arguments.get<std::string>() : structured::JsonValueGrammar::dump(arguments);
    return std::make_pair(call["name"].get<std::string>(), std::move(text_arguments));
}

// Where a character of JSON text stands: in the structure (an opening quote included), inside a
// string literal (escapes included), or the quote that closes one.
enum class JsonChar { Structure, InString, StringEnd };

// Follows string literals through JSON text one character at a time, so that a scan of the
// structure passes over brackets, commas and quotes inside strings.
class JsonStringScanner {
  public:
    JsonChar next(char c) {
        if (!in_string_) {
            in_string_ = c == '"';
            return JsonChar::Structure;
        }
        if (escaped_) {
            escaped_ = false;
        } else if (c == '\\') {
            escaped_ = true;
        } else if (c == '"') {
            in_string_ = false;
            return JsonChar::StringEnd;
        }
        return JsonChar::InString;
    }

  private:
    bool in_string_ = false;
    bool escaped_ = false;
};

// Where each element of the constrained array [{"name": N, "parameters": V}, ...] is,
// as far as the text goes.
struct ElementSpan {
    std::string name;
    bool has_name = false;
    size_t arguments_begin = std::string::npos;
    size_t arguments_end = std::string::npos;  // npos: the value is still open
};

std::vector<ElementSpan> scan_required(std::string_view text) {
    std::vector<ElementSpan> elements;
    int depth = 0;
    JsonStringScanner strings;
    bool expecting_key = false, value_pending = false;
    size_t string_begin = 0;
    std::string key, value_key;
    auto end_value = [&](size_t at) {
        if (value_key == "parameters" && !elements.empty() &&
            elements.back().arguments_end == std::string::npos &&
            elements.back().arguments_begin != std::string::npos) {
            size_t end = at;
            while (end > elements.back().arguments_begin && is_tag_space(text[end - 1])) --end;
            elements.back().arguments_end = end;
        }
        value_key.clear();
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const JsonChar kind = strings.next(c);
        if (kind == JsonChar::InString) continue;
        if (kind == JsonChar::StringEnd) {
            if (depth != 2) continue;
            Json decoded = Json::parse(text.substr(string_begin, i + 1 - string_begin), nullptr, false);
            const std::string value = decoded.is_string() ? decoded.get<std::string>() : std::string();
            if (expecting_key) {
                key = value;
                expecting_key = false;
            } else if (value_key == "name" && !elements.empty()) {
                elements.back().name = value;
                elements.back().has_name = true;
            }
            continue;
        }
        if (is_tag_space(c)) continue;
        if (value_pending && depth == 2) {
            value_pending = false;
            if (value_key == "parameters" && !elements.empty()) elements.back().arguments_begin = i;
        }
        switch (c) {
            case '"':
                string_begin = i;
                break;
            case '{':
            case '[':
                if (depth == 1 && c == '{') {
                    elements.emplace_back();
                    expecting_key = true;
                }
                ++depth;
                break;
            case '}':
            case ']':
                if (depth == 2) end_value(i);
                --depth;
                break;
            case ',':
                if (depth == 2) {
                    end_value(i);
                    expecting_key = true;
                }
                break;
            case ':':
                if (depth == 2) {
                    value_key = key;
                    value_pending = true;
                }
                break;
            default:
                break;
        }
    }
    return elements;
}

}  // namespace

std::optional<ToolCallFormat> tool_call_format_named(std::string_view name) {
    if (name == "hermes") return ToolCallFormat::Hermes;
    if (name == "llama3_json") return ToolCallFormat::Llama3Json;
    return std::nullopt;
}

std::string make_tool_call_id() {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("call_{:016x}{:08x}", rng(), uint32_t(rng()));
}

ToolCallParser::ToolCallParser(ToolChoice choice, ToolCallFormat format, std::string function_name)
    : choice_(choice), format_(format), function_name_(std::move(function_name)) {}

AnswerDelta ToolCallParser::push(std::string_view text) {
    text_ += text;
    return drain(false);
}

AnswerDelta ToolCallParser::finish() {
    return drain(true);
}

AnswerDelta ToolCallParser::drain(bool final) {
    AnswerDelta out;
    switch (choice_) {
        case ToolChoice::None:
            out.content = text_.substr(consumed_);
            consumed_ = text_.size();
            break;
        case ToolChoice::Named:
            drain_named(final, out);
            break;
        case ToolChoice::Required:
            drain_required(out);
            break;
        case ToolChoice::Auto:
            if (format_ == ToolCallFormat::Hermes) {
                drain_hermes(final, out);
            } else {
                drain_llama3(final, out);
            }
            break;
    }
    return out;
}

// Content next to tool calls: trailing whitespace (between calls, or at the end) is
// sent only once more content follows, so that however the text was split the
// message is the same.
void ToolCallParser::emit_content(std::string_view text, bool final, AnswerDelta& out) {
    size_t end = text.size();
    while (end > 0 && is_tag_space(text[end - 1])) --end;
    if (end == 0) {
        if (!final) held_space_ += text;
        return;
    }
    out.content += held_space_;
    out.content += text.substr(0, end);
    held_space_ = final ? std::string() : std::string(text.substr(end));
}

void ToolCallParser::add_call(std::string name, std::string arguments, AnswerDelta& out) {
    ToolCall call{make_tool_call_id(), std::move(name), std::move(arguments)};
    out.tool_calls.push_back({int32_t(calls_.size()), call.id, call.name, call.arguments});
    calls_.push_back(std::move(call));
}

void ToolCallParser::drain_named(bool final, AnswerDelta& out) {
    const std::string_view fresh = std::string_view(text_).substr(consumed_);
    consumed_ = text_.size();
    if (calls_.empty()) {
        if (fresh.empty() && !final) return;
        add_call(function_name_, std::string(fresh), out);
        return;
    }
    if (fresh.empty()) return;
    calls_[0].arguments += fresh;
    out.tool_calls.push_back({0, "", "", std::string(fresh)});
}

void ToolCallParser::drain_required(AnswerDelta& out) {
    const std::vector<ElementSpan> elements = scan_required(text_);
    for (size_t k = 0; k < elements.size(); ++k) {
        const ElementSpan& element = elements[k];
        if (!element.has_name) break;
        if (k >= calls_.size()) {
            add_call(element.name, "", out);
            sent_arguments_.push_back(0);
        }
        if (element.arguments_begin == std::string::npos) continue;
        const size_t end = element.arguments_end == std::string::npos ? text_.size() : element.arguments_end;
        const size_t begin = element.arguments_begin + sent_arguments_[k];
        if (end <= begin) continue;
        const std::string more = text_.substr(begin, end - begin);
        sent_arguments_[k] += more.size();
        calls_[k].arguments += more;
        if (!out.tool_calls.empty() && out.tool_calls.back().index == int32_t(k)) {
            out.tool_calls.back().arguments += more;
        } else {
            out.tool_calls.push_back({int32_t(k), "", "", more});
        }
    }
}

void ToolCallParser::drain_hermes(bool final, AnswerDelta& out) {
    while (consumed_ < text_.size() || (final && in_call_)) {
        const std::string_view rest = std::string_view(text_).substr(consumed_);
        if (!in_call_) {
            const size_t start = rest.find(kCallStart);
            if (start == std::string_view::npos) {
                const size_t keep = final ? 0 : partial_tag_suffix(rest, kCallStart);
                emit_content(rest.substr(0, rest.size() - keep), final, out);
                consumed_ += rest.size() - keep;
                return;
            }
            emit_content(rest.substr(0, start), final, out);
            consumed_ += start + kCallStart.size();
            in_call_ = true;
            continue;
        }
        const size_t end = rest.find(kCallEnd);
        if (end == std::string_view::npos && !final) return;
        const std::string_view body = rest.substr(0, end == std::string_view::npos ? rest.size() : end);
        if (auto call = parse_call_object(body)) {
            add_call(std::move(call->first), std::move(call->second), out);
        } else {
            // Not a well-formed call: it stays text.
            std::string text = std::string(kCallStart) + std::string(body);
            if (end != std::string_view::npos) text += kCallEnd;
            emit_content(text, final, out);
        }
        consumed_ += end == std::string_view::npos ? rest.size() : end + kCallEnd.size();
        in_call_ = false;
    }
}

void ToolCallParser::drain_llama3(bool final, AnswerDelta& out) {
    std::string_view rest = std::string_view(text_).substr(consumed_);
    if (!llama3_decided_) {
        const std::string_view start = trim(rest);
        if (!final && (start.empty() ||
                       (start.size() < kPythonTag.size() && kPythonTag.substr(0, start.size()) == start)))
            return;
        llama3_decided_ = true;
        llama3_calls_ = start.substr(0, 1) == "{" || start.substr(0, kPythonTag.size()) == kPythonTag;
    }
    if (!llama3_calls_) {
        emit_content(rest, final, out);
        consumed_ = text_.size();
        return;
    }
    if (!final) return;  // a call is read whole
    std::string_view body = trim(rest);
    if (body.substr(0, kPythonTag.size()) == kPythonTag) body.remove_prefix(kPythonTag.size());
    // Objects separated by ';' at the top level.
    std::vector<std::pair<std::string, std::string>> parsed;
    int depth = 0;
    JsonStringScanner strings;
    bool ok = true;
    size_t begin = 0;
    for (size_t i = 0; i <= body.size() && ok; ++i) {
        const char c = i < body.size() ? body[i] : ';';
        if (strings.next(c) != JsonChar::Structure) continue;
        if (c == '{' || c == '[') ++depth;
        if (c == '}' || c == ']') --depth;
        if (c == ';' && depth == 0) {
            auto call = parse_call_object(body.substr(begin, i - begin));
            if (!call) ok = false;
            if (call) parsed.push_back(std::move(*call));
            begin = i + 1;
        }
    }
    if (!ok || parsed.empty()) {
        emit_content(rest, true, out);
    } else {
        for (auto& [name, arguments] : parsed) add_call(std::move(name), std::move(arguments), out);
    }
    consumed_ = text_.size();
}

}  // namespace lmrun::server
