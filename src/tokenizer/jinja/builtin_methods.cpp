// Python methods callable on template values: the read-only str and dict
// methods chat templates use (the sandbox forbids mutating ones anyway).
#include "tokenizer/jinja/builtins.h"

#include <array>

#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/text_util.h"
#include "tokenizer/jinja/value_format.h"

namespace lmrun::jinja {
namespace {

constexpr std::array<std::string_view, 17> kStringMethods = {
    "startswith", "endswith",   "split",   "rsplit", "strip", "lstrip", "rstrip",     "upper", "lower",
    "title",      "capitalize", "replace", "find",   "count", "join",   "splitlines", "format"};
constexpr std::array<std::string_view, 4> kDictMethods = {"items", "keys", "values", "get"};

bool contains_name(auto names, std::string_view name) {
    for (const std::string_view candidate : names)
        if (candidate == name) return true;
    return false;
}

// startswith/endswith take a string or a tuple (list) of strings.
Result<Value> affix_test(std::string_view method, const std::string& text, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind(method, args, {"affix"}));
    ValueList affixes = bound[0].kind() == ValueKind::List ? bound[0].as_list() : ValueList{bound[0]};
    for (const Value& affix : affixes) {
        if (!affix.is_string())
            return make_error("{} first arg must be str or a tuple of str, not {}", method,
                              type_name(affix.kind()));
        const std::string& a = affix.as_string();
        if (a.size() > text.size()) continue;
        const bool match = method == "startswith" ? text.compare(0, a.size(), a) == 0
                                                  : text.compare(text.size() - a.size(), a.size(), a) == 0;
        if (match) return Value(true);
    }
    return Value(false);
}

Value string_list(const std::vector<std::string>& parts) {
    ValueList items;
    items.reserve(parts.size());
    for (const std::string& part : parts) items.emplace_back(part);
    return Value::list(std::move(items));
}

Result<Value> split_method(std::string_view method, const std::string& text, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind(method, args, {"sep", "maxsplit"}));
    LMRUN_ASSIGN_OR_RETURN(std::string sep, bound.get_string(0, ""));
    const bool sep_given = bound.given(0) && !bound[0].is_none();
    if (sep_given && sep.empty()) return make_error("empty separator");
    LMRUN_ASSIGN_OR_RETURN(int64_t max_split, bound.get_int(1, -1));
    if (method == "split" || max_split < 0) {
        LMRUN_ASSIGN_OR_RETURN(std::vector<std::string> parts, python_split(text, sep, sep_given, max_split));
        return string_list(parts);
    }
    // rsplit with a limit: split from the right by reversing the work on pieces.
    LMRUN_ASSIGN_OR_RETURN(std::vector<std::string> all, python_split(text, sep, sep_given, -1));
    if (static_cast<int64_t>(all.size()) <= max_split + 1) return string_list(all);
    if (!sep_given) return make_error("rsplit() with maxsplit needs a separator");
    const size_t num_joined = all.size() - static_cast<size_t>(max_split);
    std::string head = all[0];
    for (size_t i = 1; i < num_joined; ++i) head += sep + all[i];
    std::vector<std::string> parts = {head};
    parts.insert(parts.end(), all.begin() + static_cast<ptrdiff_t>(num_joined), all.end());
    return string_list(parts);
}

Result<Value> strip_method(std::string_view method, const std::string& text, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind(method, args, {"chars"}));
    LMRUN_ASSIGN_OR_RETURN(std::string chars, bound.get_string(0, ""));
    const bool chars_given = bound.given(0) && !bound[0].is_none();
    const StripSide side = method == "lstrip"   ? StripSide::Left
                           : method == "rstrip" ? StripSide::Right
                                                : StripSide::Both;
    return Value(python_strip(text, side, chars, chars_given));
}

Result<Value> count_or_find(std::string_view method, const std::string& text, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind(method, args, {"sub"}));
    LMRUN_ASSIGN_OR_RETURN(std::string sub, bound.get_string(0, ""));
    if (method == "find") {
        const size_t found = text.find(sub);
        if (found == std::string::npos) return Value(int64_t{-1});
        return Value(static_cast<int64_t>(code_point_count(std::string_view(text).substr(0, found))));
    }
    if (sub.empty()) return Value(static_cast<int64_t>(code_point_count(text) + 1));
    int64_t count = 0;
    for (size_t pos = text.find(sub); pos != std::string::npos; pos = text.find(sub, pos + sub.size()))
        ++count;
    return Value(count);
}

Result<Value> join_method(const std::string& separator, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind("join", args, {"iterable"}));
    LMRUN_ASSIGN_OR_RETURN(ValueList items, iterate(bound[0]));
    std::string result;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_string())
            return make_error("sequence item {}: expected str instance, {} found", i,
                              type_name(items[i].kind()));
        LMRUN_RETURN_IF_ERROR(check_value_bytes(
            uint64_t(result.size()) + (i > 0 ? separator.size() : 0) + items[i].as_string().size(),
            "join() result"));
        if (i > 0) result += separator;
        result += items[i].as_string();
    }
    return Value(std::move(result));
}

Result<Value> string_method(const std::string& text, std::string_view name, const CallArgs& args) {
    if (name == "startswith" || name == "endswith") return affix_test(name, text, args);
    if (name == "split" || name == "rsplit") return split_method(name, text, args);
    if (name == "strip" || name == "lstrip" || name == "rstrip") return strip_method(name, text, args);
    if (name == "find" || name == "count") return count_or_find(name, text, args);
    if (name == "join") return join_method(text, args);
    if (name == "replace") {
        LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind(name, args, {"old", "new", "count"}));
        LMRUN_ASSIGN_OR_RETURN(std::string from, bound.get_string(0, ""));
        LMRUN_ASSIGN_OR_RETURN(std::string to, bound.get_string(1, ""));
        LMRUN_ASSIGN_OR_RETURN(int64_t count, bound.get_int(2, -1));
        LMRUN_ASSIGN_OR_RETURN(std::string replaced, replace_all(text, from, to, count));
        return Value(std::move(replaced));
    }
    if (name == "splitlines") {
        LMRUN_ASSIGN_OR_RETURN(std::vector<std::string> lines, python_split(text, "\n", true, -1));
        if (!lines.empty() && lines.back().empty()) lines.pop_back();
        for (std::string& line : lines)
            if (!line.empty() && line.back() == '\r') line.pop_back();
        return string_list(lines);
    }
    if (name == "format") return make_error("str.format() is not supported");
    LMRUN_ASSIGN_OR_RETURN(BoundArgs none, BoundArgs::bind(name, args, {}));
    (void)none;
    // Full case mapping can triple a string (U+0390 upper-cases to three code points).
    LMRUN_RETURN_IF_ERROR(check_value_bytes(saturating_mul(text.size(), 3), "the result"));
    if (name == "upper") return Value(to_upper(text));
    if (name == "lower") return Value(to_lower(text));
    if (name == "capitalize") return Value(capitalize(text));
    return Value(title_case(text));  // "title"
}

Result<Value> dict_method(const ValueDict& dict, std::string_view name, const CallArgs& args) {
    if (name == "get") {
        LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind(name, args, {"key", "default"}));
        if (bound[0].is_string()) {
            if (const Value* found = dict.find(bound[0].as_string())) return *found;
        }
        return bound.given(1) ? bound[1] : Value::none();
    }
    LMRUN_ASSIGN_OR_RETURN(BoundArgs none, BoundArgs::bind(name, args, {}));
    (void)none;
    ValueList items;
    items.reserve(dict.entries.size());
    for (const auto& [key, value] : dict.entries) {
        if (name == "items") {
            items.push_back(Value::list({Value(key), value}));
        } else {
            items.push_back(name == "keys" ? Value(key) : value);
        }
    }
    return Value::list(std::move(items));
}

}  // namespace

bool has_method(const Value& object, std::string_view name) {
    if (object.is_string()) return contains_name(kStringMethods, name);
    if (object.kind() == ValueKind::Dict) return contains_name(kDictMethods, name);
    return false;
}

Result<Value> call_method(const Value& object, std::string_view name, const CallArgs& args) {
    if (object.is_string()) return string_method(object.as_string(), name, args);
    return dict_method(object.as_dict(), name, args);
}

}  // namespace lmrun::jinja
