// Global functions: Jinja's range/namespace/dict plus the two helpers Hugging
// Face adds to chat templates, raise_exception(msg) and strftime_now(format).
#include <ctime>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/value_format.h"

namespace lmrun::jinja {
namespace {

Result<Value> range_function(const CallArgs& args, Interpreter&) {
    if (!args.keyword.empty()) return make_error("range() takes no keyword arguments");
    if (args.positional.empty() || args.positional.size() > 3)
        return make_error("range expected 1 to 3 arguments, got {}", args.positional.size());
    int64_t bounds[3] = {0, 0, 1};
    for (size_t i = 0; i < args.positional.size(); ++i) {
        const Value& arg = args.positional[i];
        if (arg.kind() != ValueKind::Int && arg.kind() != ValueKind::Bool)
            return make_error("'{}' object cannot be interpreted as an integer", type_name(arg.kind()));
        bounds[i] = arg.kind() == ValueKind::Bool ? int64_t{arg.as_bool()} : arg.as_int();
    }
    int64_t start = 0;
    int64_t stop = bounds[0];
    int64_t step = 1;
    if (args.positional.size() >= 2) {
        start = bounds[0];
        stop = bounds[1];
        step = bounds[2];
    }
    if (step == 0) return make_error("range() arg 3 must not be zero");
    ValueList items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (static_cast<int64_t>(items.size()) >= kMaxRangeItems)
            return make_error("range() is too big (more than {} items)", kMaxRangeItems);
        items.emplace_back(i);
        if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
    }
    return Value::list(std::move(items));
}

Result<Value> namespace_function(const CallArgs& args, Interpreter& interpreter) {
    ValueDict attributes;
    for (const Value& positional : args.positional) {
        if (positional.kind() != ValueKind::Dict)
            return make_error("namespace() takes only a mapping as positional argument");
        for (const auto& [key, value] : positional.as_dict().entries) attributes.set(key, value);
    }
    for (const auto& [key, value] : args.keyword) attributes.set(key, value);
    Value ns = Value::make_namespace(std::move(attributes));
    interpreter.own_namespace(ns);
    return ns;
}

Result<Value> dict_function(const CallArgs& args, Interpreter&) {
    ValueDict entries;
    if (args.positional.size() > 1)
        return make_error("dict expected at most 1 argument, got {}", args.positional.size());
    if (!args.positional.empty()) {
        if (args.positional[0].kind() != ValueKind::Dict)
            return make_error("dict() argument must be a mapping");
        entries = args.positional[0].as_dict();
    }
    for (const auto& [key, value] : args.keyword) entries.set(key, value);
    return Value::dict(std::move(entries));
}

Result<Value> raise_exception_function(const CallArgs& args, Interpreter&) {
    const std::string message = args.positional.empty() ? std::string() : to_python_str(args.positional[0]);
    return make_error("raise_exception: {}", message);
}

Result<Value> strftime_now_function(const CallArgs& args, Interpreter&) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind("strftime_now", args, {"format"}));
    LMRUN_ASSIGN_OR_RETURN(std::string format, bound.get_string(0, ""));
    const std::time_t now = std::time(nullptr);
    std::tm local_time{};
    localtime_r(&now, &local_time);
    char buffer[256];
    const size_t length = std::strftime(buffer, sizeof(buffer), format.c_str(), &local_time);
    return Value(std::string(buffer, length));
}

}  // namespace

void add_builtin_globals(std::unordered_map<std::string, Value>& frame) {
    frame["range"] = Value::callable("range", range_function);
    frame["namespace"] = Value::callable("namespace", namespace_function);
    frame["dict"] = Value::callable("dict", dict_function);
    frame["raise_exception"] = Value::callable("raise_exception", raise_exception_function);
    frame["strftime_now"] = Value::callable("strftime_now", strftime_now_function);
}

}  // namespace lmrun::jinja
