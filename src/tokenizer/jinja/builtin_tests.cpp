// Jinja tests (`x is name`), as in jinja2/tests.py.
#include "tokenizer/jinja/builtins.h"

#include <cmath>

#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/text_util.h"

namespace lmrun::jinja {
namespace {

Result<Value> single_argument(std::string_view name, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(BoundArgs bound, BoundArgs::bind(name, args, {"other"}));
    if (!bound.given(0)) return make_error("test '{}' needs an argument", name);
    return bound[0];
}

bool is_integer(const Value& value) {
    return value.kind() == ValueKind::Int;
}

Result<bool> comparison_test(std::string_view name, const Value& operand, const CallArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(Value other, single_argument(name, args));
    if (name == "eq" || name == "equalto" || name == "==") return values_equal(operand, other);
    if (name == "ne" || name == "!=") return !values_equal(operand, other);
    if (name == "lt" || name == "lessthan" || name == "<") return value_less(operand, other);
    if (name == "gt" || name == "greaterthan" || name == ">") return value_less(other, operand);
    if (name == "le" || name == "<=") {
        LMRUN_ASSIGN_OR_RETURN(bool greater, value_less(other, operand));
        return !greater;
    }
    if (name == "ge" || name == ">=") {
        LMRUN_ASSIGN_OR_RETURN(bool less, value_less(operand, other));
        return !less;
    }
    if (name == "in") return contains(other, operand);
    // sameas: identity; for the immutable scalars Jinja uses it with, equal kind and value.
    return operand.kind() == other.kind() && values_equal(operand, other);
}

bool is_comparison_test(std::string_view name) {
    for (const std::string_view test : {"eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "gt",
                                        "greaterthan", ">", "le", "<=", "ge", ">=", "in", "sameas"})
        if (name == test) return true;
    return false;
}

}  // namespace

bool is_known_test(std::string_view name) {
    static constexpr std::string_view kNames[] = {"defined", "undefined", "none",     "true",       "false",
                                                  "boolean", "string",    "mapping",  "number",     "integer",
                                                  "float",   "callable",  "iterable", "sequence",   "lower",
                                                  "upper",   "even",      "odd",      "divisibleby"};
    for (const std::string_view known : kNames)
        if (known == name) return true;
    return is_comparison_test(name);
}

Result<bool> apply_test(std::string_view name, const Value& operand, const CallArgs& args) {
    const ValueKind kind = operand.kind();
    if (name == "defined") return kind != ValueKind::Undefined;
    if (name == "undefined") return kind == ValueKind::Undefined;
    if (name == "none") return kind == ValueKind::None;
    if (name == "true") return kind == ValueKind::Bool && operand.as_bool();
    if (name == "false") return kind == ValueKind::Bool && !operand.as_bool();
    if (name == "boolean") return kind == ValueKind::Bool;
    if (name == "string") return kind == ValueKind::String;
    if (name == "mapping") return kind == ValueKind::Dict;
    if (name == "number") return operand.is_number();
    if (name == "integer") return is_integer(operand);
    if (name == "float") return kind == ValueKind::Float;
    if (name == "callable") return kind == ValueKind::Callable;
    if (name == "iterable")
        return kind == ValueKind::List || kind == ValueKind::Dict || kind == ValueKind::String ||
               kind == ValueKind::Undefined;
    if (name == "sequence")
        return kind == ValueKind::List || kind == ValueKind::Dict || kind == ValueKind::String ||
               kind == ValueKind::Undefined;
    if (name == "lower" || name == "upper") {
        if (!operand.is_string()) return false;
        const std::string& text = operand.as_string();
        return name == "lower" ? to_lower(text) == text : to_upper(text) == text;
    }
    if (name == "even" || name == "odd" || name == "divisibleby") {
        if (!is_integer(operand) && kind != ValueKind::Bool)
            return make_error("test '{}' needs an integer, got {}", name, type_name(kind));
        const int64_t value = kind == ValueKind::Bool ? int64_t{operand.as_bool()} : operand.as_int();
        if (name == "even") return value % 2 == 0;
        if (name == "odd") return value % 2 != 0;
        LMRUN_ASSIGN_OR_RETURN(Value divisor, single_argument(name, args));
        if (!is_integer(divisor) || divisor.as_int() == 0)
            return make_error("divisibleby needs a non-zero integer");
        return value % divisor.as_int() == 0;
    }
    if (is_comparison_test(name)) return comparison_test(name, operand, args);
    return make_error("unknown test '{}'", name);
}

}  // namespace lmrun::jinja
