#include "tokenizer/jinja/value_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "tokenizer/jinja/render_budget.h"
#include "tokenizer/jinja/text_util.h"

namespace lmrun::jinja {

std::string format_python_float(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    // Shortest round-trip digits in scientific form, e.g. "1.2345e+02".
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
    const std::string scientific(buffer, result.ptr);
    const size_t e_pos = scientific.find('e');
    const bool negative = scientific[0] == '-';
    std::string digits;
    for (size_t i = negative ? 1 : 0; i < e_pos; ++i)
        if (scientific[i] != '.') digits += scientific[i];
    const int exponent = std::stoi(scientific.substr(e_pos + 1));
    std::string text = negative ? "-" : "";
    const int num_digits = static_cast<int>(digits.size());
    if (exponent < -4 || exponent >= 16) {
        // Python: mantissa without a trailing ".0", exponent with sign and >= 2 digits.
        text += digits[0];
        if (num_digits > 1) {
            text += '.';
            text.append(digits, 1);
        }
        text += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
        return text;
    }
    if (exponent < 0) {
        text += "0.";
        text.append(static_cast<size_t>(-exponent - 1), '0');
        text += digits;
    } else if (num_digits <= exponent + 1) {
        text += digits;
        text.append(static_cast<size_t>(exponent) + 1 - digits.size(), '0');
        text += ".0";
    } else {
        const size_t integer_digits = static_cast<size_t>(exponent) + 1;  // exponent >= 0 here
        text.append(digits, 0, integer_digits);
        text += '.';
        text.append(digits, integer_digits);
    }
    return text;
}

namespace {

std::string repr_string(const std::string& text) {
    const bool has_single = text.find('\'') != std::string::npos;
    const bool has_double = text.find('"') != std::string::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t start = pos;
        const uint32_t cp = decode_utf8(text, pos);
        if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) {
            out += fmt::format("\\x{:02x}", cp);
        } else {
            out.append(text, start, pos - start);
        }
    }
    out += quote;
    return out;
}

void append_json_string(const std::string& text, bool ensure_ascii, std::string& out) {
    out += '"';
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t start = pos;
        const uint32_t cp = decode_utf8(text, pos);
        switch (cp) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (cp < 0x20 || (ensure_ascii && cp >= 0x7F && cp < 0x10000)) {
                    out += fmt::format("\\u{:04x}", cp);
                } else if (ensure_ascii && cp >= 0x10000) {
                    const uint32_t v = cp - 0x10000;  // UTF-16 surrogate pair, as Python writes it
                    out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
                } else {
                    out.append(text, start, pos - start);
                }
        }
    }
    out += '"';
}

class JsonWriter {
  public:
    explicit JsonWriter(const JsonOptions& options) : options_(options) {}

    Status write(const Value& value, int depth) {
        if (depth > 512) return make_error("tojson: nesting too deep");
        // Items are shared and indentation grows with depth: the text can be far larger than the value.
        LMRUN_RETURN_IF_ERROR(check_value_bytes(out_.size(), "tojson() result"));
        switch (value.kind()) {
            case ValueKind::None:
                out_ += "null";
                break;
            case ValueKind::Bool:
                out_ += value.as_bool() ? "true" : "false";
                break;
            case ValueKind::Int:
                out_ += std::to_string(value.as_int());
                break;
            case ValueKind::Float:
                write_float(value.as_float());
                break;
            case ValueKind::String:
                append_json_string(value.as_string(), options_.ensure_ascii, out_);
                break;
            case ValueKind::List:
                return write_list(value.as_list(), depth);
            case ValueKind::Dict:
                return write_dict(value.as_dict(), depth);
            case ValueKind::Undefined:
            case ValueKind::Namespace:
            case ValueKind::Callable:
                return make_error("Object of type {} is not JSON serializable", type_name(value.kind()));
        }
        return ok_status();
    }

    std::string take() { return std::move(out_); }

  private:
    void write_float(double number) {
        if (std::isnan(number)) {
            out_ += "NaN";
        } else if (std::isinf(number)) {
            out_ += number > 0 ? "Infinity" : "-Infinity";
        } else {
            out_ += format_python_float(number);
        }
    }

    // Before item `index` of a container at `depth`: separator and indentation.
    void begin_item(size_t index, int depth) {
        if (index > 0) out_ += options_.item_separator;
        if (options_.indent >= 0) newline(depth + 1);
    }

    void newline(int depth) {
        out_ += '\n';
        out_.append(static_cast<size_t>(options_.indent) * static_cast<size_t>(depth), ' ');
    }

    Status write_list(const ValueList& items, int depth) {
        if (items.empty()) {
            out_ += "[]";
            return ok_status();
        }
        out_ += '[';
        for (size_t i = 0; i < items.size(); ++i) {
            begin_item(i, depth);
            LMRUN_RETURN_IF_ERROR(write(items[i], depth + 1));
        }
        if (options_.indent >= 0) newline(depth);
        out_ += ']';
        return ok_status();
    }

    Status write_dict(const ValueDict& dict, int depth) {
        if (dict.entries.empty()) {
            out_ += "{}";
            return ok_status();
        }
        std::vector<const std::pair<std::string, Value>*> entries;
        entries.reserve(dict.entries.size());
        for (const auto& entry : dict.entries) entries.push_back(&entry);
        if (options_.sort_keys)
            std::sort(entries.begin(), entries.end(),
                      [](const auto* a, const auto* b) { return a->first < b->first; });
        out_ += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
            begin_item(i, depth);
            append_json_string(entries[i]->first, options_.ensure_ascii, out_);
            out_ += options_.key_separator;
            LMRUN_RETURN_IF_ERROR(write(entries[i]->second, depth + 1));
        }
        if (options_.indent >= 0) newline(depth);
        out_ += '}';
        return ok_status();
    }

    const JsonOptions& options_;
    std::string out_;
};

}  // namespace

std::string to_python_str(const Value& value) {
    switch (value.kind()) {
        case ValueKind::Undefined:
            return "";
        case ValueKind::String:
            return value.as_string();
        default:
            return to_python_repr(value);
    }
}

namespace {

// Appends the repr of `value`. A list may hold one long string many times over (items are
// shared): once `out` passes kMaxValueBytes the render budget is exhausted and appending stops
// (the render then fails; outside a render the text is cut short).
void append_repr(const Value& value, std::string& out) {
    if (out.size() > kMaxValueBytes) {
        if (RenderBudget* budget = current_budget())
            budget->exhaust(fmt::format("a string is too large (more than {} bytes)", kMaxValueBytes));
        return;
    }
    switch (value.kind()) {
        case ValueKind::Undefined:
            return;
        case ValueKind::None:
            out += "None";
            return;
        case ValueKind::Bool:
            out += value.as_bool() ? "True" : "False";
            return;
        case ValueKind::Int:
            out += std::to_string(value.as_int());
            return;
        case ValueKind::Float:
            out += format_python_float(value.as_float());
            return;
        case ValueKind::String:
            out += repr_string(value.as_string());
            return;
        case ValueKind::List: {
            out += '[';
            const ValueList& items = value.as_list();
            for (size_t i = 0; i < items.size() && out.size() <= kMaxValueBytes; ++i) {
                if (i > 0) out += ", ";
                append_repr(items[i], out);
            }
            out += ']';
            return;
        }
        case ValueKind::Dict: {
            out += '{';
            const ValueDict& dict = value.as_dict();
            for (size_t i = 0; i < dict.entries.size() && out.size() <= kMaxValueBytes; ++i) {
                if (i > 0) out += ", ";
                out += repr_string(dict.entries[i].first) + ": ";
                append_repr(dict.entries[i].second, out);
            }
            out += '}';
            return;
        }
        case ValueKind::Namespace:
            out += "<Namespace>";
            return;
        case ValueKind::Callable:
            out += "<function " + value.as_callable().name + ">";
            return;
    }
}

}  // namespace

std::string to_python_repr(const Value& value) {
    std::string out;
    append_repr(value, out);
    return out;
}

Result<std::string> to_json_text(const Value& value, const JsonOptions& options) {
    JsonWriter writer(options);
    LMRUN_RETURN_IF_ERROR(writer.write(value, 0));
    return writer.take();
}

}  // namespace lmrun::jinja
