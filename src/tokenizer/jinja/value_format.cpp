#include "tokenizer/jinja/value_format.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

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
        text.append(static_cast<size_t>(exponent + 1 - num_digits), '0');
        text += ".0";
    } else {
        text.append(digits, 0, static_cast<size_t>(exponent + 1));
        text += '.';
        text.append(digits, static_cast<size_t>(exponent + 1));
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

void append_json_string(const std::string& text, std::string& out) {
    out += '"';
    for (const char c : text) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

Status append_json(const Value& value, int indent, int depth, std::string& out);

void append_newline_indent(int indent, int depth, std::string& out) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
}

Status append_json_list(const ValueList& items, int indent, int depth, std::string& out) {
    if (items.empty()) {
        out += "[]";
        return ok_status();
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) append_newline_indent(indent, depth + 1, out);
        LMRUN_RETURN_IF_ERROR(append_json(items[i], indent, depth + 1, out));
    }
    if (indent >= 0) append_newline_indent(indent, depth, out);
    out += ']';
    return ok_status();
}

Status append_json_dict(const ValueDict& dict, int indent, int depth, std::string& out) {
    if (dict.entries.empty()) {
        out += "{}";
        return ok_status();
    }
    out += '{';
    for (size_t i = 0; i < dict.entries.size(); ++i) {
        if (i > 0) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) append_newline_indent(indent, depth + 1, out);
        append_json_string(dict.entries[i].first, out);
        out += ": ";
        LMRUN_RETURN_IF_ERROR(append_json(dict.entries[i].second, indent, depth + 1, out));
    }
    if (indent >= 0) append_newline_indent(indent, depth, out);
    out += '}';
    return ok_status();
}

Status append_json(const Value& value, int indent, int depth, std::string& out) {
    if (depth > 512) return make_error("tojson: nesting too deep");
    switch (value.kind()) {
        case ValueKind::None: out += "null"; break;
        case ValueKind::Bool: out += value.as_bool() ? "true" : "false"; break;
        case ValueKind::Int: out += std::to_string(value.as_int()); break;
        case ValueKind::Float: {
            const double number = value.as_float();
            if (std::isnan(number)) {
                out += "NaN";
            } else if (std::isinf(number)) {
                out += number > 0 ? "Infinity" : "-Infinity";
            } else {
                out += format_python_float(number);
            }
            break;
        }
        case ValueKind::String: append_json_string(value.as_string(), out); break;
        case ValueKind::List: return append_json_list(value.as_list(), indent, depth, out);
        case ValueKind::Dict: return append_json_dict(value.as_dict(), indent, depth, out);
        case ValueKind::Undefined:
        case ValueKind::Namespace:
        case ValueKind::Callable:
            return make_error("Object of type {} is not JSON serializable", type_name(value.kind()));
    }
    return ok_status();
}

}  // namespace

std::string to_python_str(const Value& value) {
    switch (value.kind()) {
        case ValueKind::Undefined: return "";
        case ValueKind::String: return value.as_string();
        default: return to_python_repr(value);
    }
}

std::string to_python_repr(const Value& value) {
    switch (value.kind()) {
        case ValueKind::Undefined: return "";
        case ValueKind::None: return "None";
        case ValueKind::Bool: return value.as_bool() ? "True" : "False";
        case ValueKind::Int: return std::to_string(value.as_int());
        case ValueKind::Float: return format_python_float(value.as_float());
        case ValueKind::String: return repr_string(value.as_string());
        case ValueKind::List: {
            std::string out = "[";
            const ValueList& items = value.as_list();
            for (size_t i = 0; i < items.size(); ++i) {
                if (i > 0) out += ", ";
                out += to_python_repr(items[i]);
            }
            return out + "]";
        }
        case ValueKind::Dict: {
            std::string out = "{";
            const ValueDict& dict = value.as_dict();
            for (size_t i = 0; i < dict.entries.size(); ++i) {
                if (i > 0) out += ", ";
                out += repr_string(dict.entries[i].first) + ": " + to_python_repr(dict.entries[i].second);
            }
            return out + "}";
        }
        case ValueKind::Namespace: return "<Namespace>";
        case ValueKind::Callable: return "<function " + value.as_callable().name + ">";
    }
    return "";
}

Result<std::string> to_json_text(const Value& value, int indent) {
    std::string out;
    LMRUN_RETURN_IF_ERROR(append_json(value, indent, 0, out));
    return out;
}

}  // namespace lmrun::jinja
