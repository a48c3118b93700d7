// Jinja filters (`x | name(args)`), following jinja2/filters.py, with
// Hugging Face's `tojson` (json.dumps, ensure_ascii=False, keys unsorted).
#include "tokenizer/jinja/builtins.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/text_util.h"
#include "tokenizer/jinja/value_format.h"

namespace lmrun::jinja {
namespace {

Result<Value> length_filter(const Value& operand) {
    switch (operand.kind()) {
        case ValueKind::Undefined:
            return Value(int64_t{0});
        case ValueKind::String:
            return Value(static_cast<int64_t>(code_point_count(operand.as_string())));
        case ValueKind::List:
            return Value(static_cast<int64_t>(operand.as_list().size()));
        case ValueKind::Dict:
            return Value(static_cast<int64_t>(operand.as_dict().entries.size()));
        default:
            return make_error("object of type '{}' has no len()", type_name(operand.kind()));
    }
}

// HF's tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Result<Value> tojson_filter(const Value& operand, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(
        BoundArgs bound,
        BoundArgs::bind("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"}));
    JsonOptions options;
    options.ensure_ascii = bound[0].truthy();
    options.sort_keys = bound[3].truthy();
    LMRUN_ASSIGN_OR_RETURN(int64_t indent, bound.get_int(1, -1));
    options.indent = static_cast<int>(std::clamp<int64_t>(indent, -1, 64));
    if (options.indent >= 0)
        options.item_separator = std::string(1, ',');  // Python drops the space with indent
    if (bound.given(2) && !bound[2].is_none()) {
        const Value& separators = bound[2];
        if (separators.kind() != ValueKind::List || separators.as_list().size() != 2 ||
            !separators.as_list()[0].is_string() || !separators.as_list()[1].is_string())
            return make_error("tojson: separators must be a pair of strings");
        options.item_separator = separators.as_list()[0].as_string();
        options.key_separator = separators.as_list()[1].as_string();
    }
    LMRUN_ASSIGN_OR_RETURN(std::string text, to_json_text(operand, options));
    return Value(std::move(text));
}

Result<Value> join_filter(const Value& operand, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind("join", args, {"d", "attribute"}));
    LMRUN_ASSIGN_OR_RETURN(std::string separator, bound.get_string(0, ""));
    LMRUN_ASSIGN_OR_RETURN(ValueList items, iterate(operand));
    std::string result;
    for (size_t i = 0; i < items.size(); ++i) {
        const Value item = bound.given(1) ? get_attribute(items[i], to_python_str(bound[1])) : items[i];
        const std::string text = to_python_str(item);
        // Checked as it grows: a long separator between many items multiplies.
        LMRUN_RETURN_IF_ERROR(check_value_bytes(
            uint64_t(result.size()) + (i > 0 ? separator.size() : 0) + text.size(), "join() result"));
        if (i > 0) result += separator;
        result += text;
    }
    return Value(std::move(result));
}

Result<Value> default_filter(const Value& operand, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind("default", args, {"default_value", "boolean"}));
    const bool use_default = bound[1].truthy() ? !operand.truthy() : operand.is_undefined();
    if (!use_default) return operand;
    return bound.given(0) ? bound[0] : Value("");
}

Result<Value> first_or_last(std::string_view name, const Value& operand) {
    LMRUN_ASSIGN_OR_RETURN(ValueList items, iterate(operand));
    if (items.empty()) return Value::undefined(fmt::format("{}() of an empty sequence", name));
    return name == "first" ? items.front() : items.back();
}

Result<Value> int_filter(const Value& operand, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind("int", args, {"default"}));
    const Value fallback = bound.given(0) ? bound[0] : Value(int64_t{0});
    switch (operand.kind()) {
        case ValueKind::Int:
            return operand;
        case ValueKind::Bool:
            return Value(int64_t{operand.as_bool()});
        case ValueKind::Float:
            if (!std::isfinite(operand.as_float())) return fallback;
            return Value(static_cast<int64_t>(operand.as_float()));
        case ValueKind::String: {
            const std::string text = python_strip(operand.as_string(), StripSide::Both, "", false);
            int64_t value = 0;
            const auto parsed = std::from_chars(text.data(), text.data() + text.size(), value);
            if (parsed.ec == std::errc() && parsed.ptr == text.data() + text.size()) return Value(value);
            double number = 0.0;
            const auto parsed_float = std::from_chars(text.data(), text.data() + text.size(), number);
            if (parsed_float.ec == std::errc() && parsed_float.ptr == text.data() + text.size() &&
                std::isfinite(number))
                return Value(static_cast<int64_t>(number));
            return fallback;
        }
        default:
            return fallback;
    }
}

Result<Value> float_filter(const Value& operand, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind("float", args, {"default"}));
    const Value fallback = bound.given(0) ? bound[0] : Value(0.0);
    if (operand.is_number()) return Value(operand.to_double());
    if (!operand.is_string()) return fallback;
    const std::string text = python_strip(operand.as_string(), StripSide::Both, "", false);
    double number = 0.0;
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), number);
    if (parsed.ec == std::errc() && parsed.ptr == text.data() + text.size()) return Value(number);
    return fallback;
}

Result<Value> reverse_filter(const Value& operand) {
    if (operand.is_string()) {
        LMRUN_ASSIGN_OR_RETURN(ValueList chars, iterate(operand));
        std::string result;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) result += it->as_string();
        return Value(std::move(result));
    }
    LMRUN_ASSIGN_OR_RETURN(ValueList items, iterate(operand));
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
}

// select/reject(test, args...) and selectattr/rejectattr(attribute, test, args...).
Result<Value> select_filter(std::string_view name, const Value& operand, const CallArgs& args) {
    const bool by_attribute = name == "selectattr" || name == "rejectattr";
    const bool keep_when = name == "select" || name == "selectattr";
    if (!args.keyword.empty()) return make_error("{}: keyword arguments are not supported", name);
    size_t next = 0;
    std::string attribute;
    if (by_attribute) {
        if (args.positional.empty() || !args.positional[0].is_string())
            return make_error("{} needs an attribute name", name);
        attribute = args.positional[next++].as_string();
    }
    std::string test;
    if (next < args.positional.size()) {
        if (!args.positional[next].is_string()) return make_error("{}: the test name must be a string", name);
        test = args.positional[next++].as_string();
    }
    CallArgs test_args;
    test_args.positional.assign(args.positional.begin() + static_cast<ptrdiff_t>(next),
                                args.positional.end());
    LMRUN_ASSIGN_OR_RETURN(ValueList items, iterate(operand));
    ValueList kept;
    for (const Value& item : items) {
        const Value subject = by_attribute ? get_attribute(item, attribute) : item;
        bool passed = subject.truthy();
        if (!test.empty()) {
            LMRUN_ASSIGN_OR_RETURN(passed, apply_test(test, subject, test_args));
        }
        if (passed == keep_when) kept.push_back(item);
    }
    return Value::list(std::move(kept));
}

Result<Value> map_filter(const Value& operand, const CallArgs& args, Interpreter& interpreter) {
    LMRUN_ASSIGN_OR_RETURN(ValueList items, iterate(operand));
    ValueList mapped;
    mapped.reserve(items.size());
    if (args.positional.empty()) {
        LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind("map", args, {"attribute", "default"}));
        if (!bound[0].is_string()) return make_error("map needs a filter name or attribute=");
        for (const Value& item : items) {
            Value value = get_attribute(item, bound[0].as_string());
            if (value.is_undefined() && bound.given(1)) {
                mapped.push_back(bound[1]);
            } else {
                mapped.push_back(std::move(value));
            }
        }
        return Value::list(std::move(mapped));
    }
    if (!args.positional[0].is_string()) return make_error("map: the filter name must be a string");
    CallArgs filter_args;
    filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    filter_args.keyword = args.keyword;
    uint64_t mapped_bytes = 0;
    for (const Value& item : items) {
        LMRUN_ASSIGN_OR_RETURN(Value value,
                               apply_filter(args.positional[0].as_string(), item, filter_args, interpreter));
        // Each result may be new: their sum is bounded as they are made, not after.
        mapped_bytes = saturating_add(mapped_bytes, value.size_bytes());
        LMRUN_RETURN_IF_ERROR(check_value_bytes(mapped_bytes, "map() result"));
        if (!spend_bytes(value.is_string() ? value.size_bytes() : 16)) break;
        mapped.push_back(std::move(value));
    }
    return Value::list(std::move(mapped));
}

// sort(reverse=false, case_sensitive=false, attribute=none); stable like Python's sorted().
Result<Value> sort_filter(const Value& operand, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound,
                           BoundArgs::bind("sort", args, {"reverse", "case_sensitive", "attribute"}));
    LMRUN_ASSIGN_OR_RETURN(ValueList items, iterate(operand));
    std::vector<std::pair<Value, size_t>> keyed;
    for (size_t i = 0; i < items.size(); ++i) {
        Value key = bound.given(2) ? get_attribute(items[i], to_python_str(bound[2])) : items[i];
        if (key.is_string() && !bound[1].truthy()) key = Value(to_lower(key.as_string()));
        keyed.emplace_back(std::move(key), i);
    }
    const bool reverse = bound[0].truthy();
    Status status = ok_status();
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        Result<bool> less = reverse ? value_less(b.first, a.first) : value_less(a.first, b.first);
        if (!less.ok()) {
            if (status.ok()) status = less.error();
            return false;
        }
        return less.value();
    });
    LMRUN_RETURN_IF_ERROR(status);
    ValueList sorted;
    sorted.reserve(items.size());
    for (const auto& entry : keyed) sorted.push_back(items[entry.second]);
    return Value::list(std::move(sorted));
}

Result<Value> items_filter(const Value& operand) {
    if (operand.is_undefined()) return Value::list({});
    if (operand.kind() != ValueKind::Dict)
        return make_error("items filter needs a mapping, got {}", type_name(operand.kind()));
    return call_method(operand, "items", CallArgs{});
}

Result<std::string> html_escape(const std::string& text) {
    // "&#34;" is the longest replacement.
    LMRUN_RETURN_IF_ERROR(check_value_bytes(saturating_mul(text.size(), 5), "escape() result"));
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

Result<Value> sum_filter(const Value& operand, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind("sum", args, {"attribute", "start"}));
    Value total = bound.given(1) ? bound[1] : Value(int64_t{0});
    LMRUN_ASSIGN_OR_RETURN(ValueList items, iterate(operand));
    for (const Value& item : items) {
        const Value term = bound.given(0) ? get_attribute(item, to_python_str(bound[0])) : item;
        LMRUN_ASSIGN_OR_RETURN(total, arithmetic("+", total, term));
    }
    return total;
}

// indent(width=4, first=false, blank=false): Jinja's, with lines split on "\n".
Result<Value> indent_filter(const Value& operand, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind("indent", args, {"width", "first", "blank"}));
    std::string indentation;
    if (bound[0].is_string()) {
        indentation = bound[0].as_string();
    } else {
        LMRUN_ASSIGN_OR_RETURN(int64_t width, bound.get_int(0, 4));
        indentation.assign(static_cast<size_t>(std::clamp<int64_t>(width, 0, 1024)), ' ');
    }
    // Jinja splits (text + "\n").splitlines(), which equals splitting text on "\n".
    const std::string text = to_python_str(operand);
    LMRUN_ASSIGN_OR_RETURN(const std::vector<std::string> lines, python_split(text, "\n", true, -1));
    LMRUN_RETURN_IF_ERROR(check_value_bytes(
        saturating_add(text.size(), saturating_mul(lines.size(), indentation.size())), "indent() result"));
    std::string result = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
        result += '\n';
        if (!lines[i].empty() || bound[2].truthy()) result += indentation;
        result += lines[i];
    }
    if (bound[1].truthy()) result = indentation + result;
    return Value(std::move(result));
}

Result<Value> string_filter(std::string_view name, const Value& operand, const CallArgs& args) {
    const std::string text = to_python_str(operand);
    if (name == "trim") {
        LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind(name, args, {"chars"}));
        LMRUN_ASSIGN_OR_RETURN(std::string chars, bound.get_string(0, ""));
        return Value(python_strip(text, StripSide::Both, chars, bound.given(0) && !bound[0].is_none()));
    }
    if (name == "replace") {
        LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind(name, args, {"old", "new", "count"}));
        LMRUN_ASSIGN_OR_RETURN(int64_t count, bound.get_int(2, -1));
        LMRUN_ASSIGN_OR_RETURN(std::string replaced,
                               replace_all(text, to_python_str(bound[0]), to_python_str(bound[1]), count));
        return Value(std::move(replaced));
    }
    LMRUN_ASSIGN_OR_RETURN(BoundArgs none, BoundArgs::bind(name, args, {}));
    (void)none;
    // Full case mapping can triple a string (U+0390 upper-cases to three code points).
    if (name != "string")
        LMRUN_RETURN_IF_ERROR(check_value_bytes(saturating_mul(text.size(), 3), "the result"));
    if (name == "upper") return Value(to_upper(text));
    if (name == "lower") return Value(to_lower(text));
    if (name == "capitalize") return Value(capitalize(text));
    if (name == "title") return Value(title_case(text));
    if (name == "escape" || name == "e") {
        LMRUN_ASSIGN_OR_RETURN(std::string escaped, html_escape(text));
        return Value(std::move(escaped));
    }
    return Value(text);  // "string"
}

bool is_string_filter(std::string_view name) {
    for (const std::string_view filter :
         {"trim", "replace", "upper", "lower", "capitalize", "title", "escape", "e", "string"})
        if (name == filter) return true;
    return false;
}

}  // namespace

bool is_known_filter(std::string_view name) {
    static constexpr std::string_view kNames[] = {
        "default",    "d",          "length",  "count",  "tojson", "join",   "first",   "last",
        "int",        "float",      "reverse", "items",  "sum",    "map",    "select",  "reject",
        "selectattr", "rejectattr", "safe",    "list",   "abs",    "trim",   "replace", "upper",
        "lower",      "capitalize", "title",   "escape", "e",      "string", "sort",    "indent"};
    for (const std::string_view known : kNames)
        if (known == name) return true;
    return false;
}

Result<Value> apply_filter(std::string_view name, const Value& operand, const CallArgs& args,
                           Interpreter& interpreter) {
    if (name == "default" || name == "d") return default_filter(operand, args);
    if (name == "length" || name == "count") return length_filter(operand);
    if (name == "tojson") return tojson_filter(operand, args);
    if (name == "join") return join_filter(operand, args);
    if (name == "first" || name == "last") return first_or_last(name, operand);
    if (name == "int") return int_filter(operand, args);
    if (name == "float") return float_filter(operand, args);
    if (name == "reverse") return reverse_filter(operand);
    if (name == "items") return items_filter(operand);
    if (name == "sort") return sort_filter(operand, args);
    if (name == "indent") return indent_filter(operand, args);
    if (name == "sum") return sum_filter(operand, args);
    if (name == "map") return map_filter(operand, args, interpreter);
    if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
        return select_filter(name, operand, args);
    if (name == "safe") return operand;
    if (name == "list") {
        LMRUN_ASSIGN_OR_RETURN(ValueList items, iterate(operand));
        return Value::list(std::move(items));
    }
    if (name == "abs") {
        if (operand.kind() == ValueKind::Float) return Value(std::fabs(operand.as_float()));
        if (operand.kind() == ValueKind::Int && operand.as_int() != INT64_MIN)
            return Value(operand.as_int() < 0 ? -operand.as_int() : operand.as_int());
        return make_error("bad operand type for abs(): '{}'", type_name(operand.kind()));
    }
    if (is_string_filter(name)) return string_filter(name, operand, args);
    return make_error("unknown filter '{}'", name);
}

}  // namespace lmrun::jinja
