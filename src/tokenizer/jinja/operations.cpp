#include "tokenizer/jinja/operations.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/jinja/text_util.h"
#include "tokenizer/jinja/value_format.h"

namespace lmrun::jinja {

Error undefined_error(const Value& value) {
    const std::string& hint = value.undefined_hint();
    return make_error("{}", hint.empty() ? std::string("value is undefined") : hint);
}

Result<ValueList> iterate(const Value& value) {
    switch (value.kind()) {
        case ValueKind::Undefined:
            return ValueList{};
        case ValueKind::List:
            spend_steps(int64_t(value.as_list().size()));
            return value.as_list();
        case ValueKind::Dict: {
            spend_steps(int64_t(value.as_dict().entries.size()));
            ValueList keys;
            for (const auto& entry : value.as_dict().entries) keys.emplace_back(entry.first);
            return keys;
        }
        case ValueKind::String: {
            const std::string& text = value.as_string();
            const std::vector<size_t> offsets = code_point_offsets(text);
            LMRUN_RETURN_IF_ERROR(check_list_items(offsets.size() - 1, "iterating over a string"));
            spend_steps(int64_t(offsets.size()));
            ValueList chars;
            chars.reserve(offsets.size() - 1);
            for (size_t i = 0; i + 1 < offsets.size(); ++i)
                chars.emplace_back(text.substr(offsets[i], offsets[i + 1] - offsets[i]));
            return chars;
        }
        default:
            return make_error("'{}' object is not iterable", type_name(value.kind()));
    }
}

Value get_attribute(const Value& object, const std::string& name) {
    if (object.kind() == ValueKind::Dict || object.kind() == ValueKind::Namespace) {
        if (const Value* found = object.as_dict().find(name)) return *found;
    }
    return Value::undefined(fmt::format("'{} object' has no attribute '{}'", type_name(object.kind()), name));
}

namespace {

// Python's index normalisation: -1 is the last element.
bool normalize_index(const Value& index, size_t size, size_t& out) {
    if (index.kind() != ValueKind::Int && index.kind() != ValueKind::Bool) return false;
    int64_t i = index.kind() == ValueKind::Bool ? int64_t{index.as_bool()} : index.as_int();
    if (i < 0) i += static_cast<int64_t>(size);
    if (i < 0 || i >= static_cast<int64_t>(size)) return false;
    out = static_cast<size_t>(i);
    return true;
}

Value missing_item(const Value& object, const Value& index) {
    return Value::undefined(
        fmt::format("'{} object' has no element {}", type_name(object.kind()), to_python_repr(index)));
}

}  // namespace

Result<Value> get_item(const Value& object, const Value& index) {
    size_t i = 0;
    switch (object.kind()) {
        case ValueKind::Undefined:
            return undefined_error(object);
        case ValueKind::List:
            if (normalize_index(index, object.as_list().size(), i)) return object.as_list()[i];
            return missing_item(object, index);
        case ValueKind::String: {
            // Walks to the code point: no table of offsets for one character of a long string.
            const std::string& text = object.as_string();
            if (!normalize_index(index, code_point_count(text), i)) return missing_item(object, index);
            size_t pos = 0;
            for (size_t skipped = 0; skipped < i; ++skipped) decode_utf8(text, pos);
            const size_t start = pos;
            decode_utf8(text, pos);
            return Value(text.substr(start, pos - start));
        }
        case ValueKind::Dict:
        case ValueKind::Namespace:
            if (index.is_string()) {
                if (const Value* found = object.as_dict().find(index.as_string())) return *found;
                return Value::undefined(
                    fmt::format("'dict object' has no attribute '{}'", index.as_string()));
            }
            return missing_item(object, index);
        default:
            return missing_item(object, index);
    }
}

namespace {

Result<std::vector<size_t>> slice_indices(size_t size, const Value& start, const Value& stop,
                                          const Value& step) {
    const auto as_int = [](const Value& v, int64_t& out) -> Status {
        if (v.is_undefined() || v.is_none()) return ok_status();
        if (v.kind() == ValueKind::Bool) {
            out = v.as_bool() ? 1 : 0;
        } else if (v.kind() == ValueKind::Int) {
            out = v.as_int();
        } else {
            return make_error("slice indices must be integers or None, not {}", type_name(v.kind()));
        }
        return ok_status();
    };
    const int64_t length = static_cast<int64_t>(size);
    int64_t step_value = 1;
    LMRUN_RETURN_IF_ERROR(as_int(step, step_value));
    if (step_value == 0) return make_error("slice step cannot be zero");
    int64_t begin = step_value > 0 ? 0 : length - 1;
    int64_t end = step_value > 0 ? length : -1;
    const auto clamp = [&](int64_t i) {
        if (i < 0) i += length;
        if (step_value > 0) return std::clamp<int64_t>(i, 0, length);
        return std::clamp<int64_t>(i, -1, length - 1);
    };
    if (!start.is_undefined() && !start.is_none()) {
        LMRUN_RETURN_IF_ERROR(as_int(start, begin));
        begin = clamp(begin);
    }
    if (!stop.is_undefined() && !stop.is_none()) {
        LMRUN_RETURN_IF_ERROR(as_int(stop, end));
        end = clamp(end);
    }
    std::vector<size_t> indices;
    for (int64_t i = begin; step_value > 0 ? i < end : i > end; i += step_value)
        indices.push_back(static_cast<size_t>(i));
    return indices;
}

}  // namespace

Result<Value> slice_value(const Value& object, const Value& start, const Value& stop, const Value& step) {
    if (object.kind() == ValueKind::List) {
        const ValueList& items = object.as_list();
        LMRUN_ASSIGN_OR_RETURN(std::vector<size_t> indices, slice_indices(items.size(), start, stop, step));
        ValueList result;
        result.reserve(indices.size());
        for (const size_t i : indices) result.push_back(items[i]);
        return Value::list(std::move(result));
    }
    if (object.is_string()) {
        const std::string& text = object.as_string();
        const std::vector<size_t> offsets = code_point_offsets(text);
        LMRUN_ASSIGN_OR_RETURN(std::vector<size_t> indices,
                               slice_indices(offsets.size() - 1, start, stop, step));
        std::string result;
        for (const size_t i : indices) result.append(text, offsets[i], offsets[i + 1] - offsets[i]);
        return Value(std::move(result));
    }
    if (object.is_undefined()) return undefined_error(object);
    return make_error("'{}' object is not subscriptable", type_name(object.kind()));
}

Result<bool> contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case ValueKind::Undefined:
            return false;
        case ValueKind::String:
            if (!item.is_string())
                return make_error("'in <string>' requires string as left operand, not {}",
                                  type_name(item.kind()));
            spend_bytes(container.as_string().size());
            return container.as_string().find(item.as_string()) != std::string::npos;
        case ValueKind::List:
            spend_steps(int64_t(container.as_list().size()));
            for (const Value& element : container.as_list())
                if (values_equal(element, item)) return true;
            return false;
        case ValueKind::Dict:
        case ValueKind::Namespace:
            return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
        default:
            return make_error("argument of type '{}' is not iterable", type_name(container.kind()));
    }
}

namespace {

int64_t int_of(const Value& value) {
    return value.kind() == ValueKind::Bool ? (value.as_bool() ? 1 : 0) : value.as_int();
}

Error unsupported(std::string_view op, const Value& a, const Value& b) {
    return make_error("unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(a.kind()),
                      type_name(b.kind()));
}

Result<Value> repeat(const Value& sequence, int64_t count) {
    if (count < 0) count = 0;
    const uint64_t times = static_cast<uint64_t>(count);
    LMRUN_RETURN_IF_ERROR(
        check_value_bytes(saturating_mul(sequence.size_bytes(), times), "repetition result"));
    if (sequence.is_string()) {
        const std::string& text = sequence.as_string();
        std::string result;
        result.reserve(text.size() * times);
        for (int64_t i = 0; i < count; ++i) result += text;
        return Value(std::move(result));
    }
    const ValueList& items = sequence.as_list();
    LMRUN_RETURN_IF_ERROR(check_list_items(saturating_mul(items.size(), times), "repetition result"));
    ValueList result;
    result.reserve(items.size() * times);
    for (int64_t i = 0; i < count; ++i) result.insert(result.end(), items.begin(), items.end());
    return Value::list(std::move(result));
}

Result<Value> integer_arithmetic(std::string_view op, int64_t x, int64_t y) {
    int64_t result = 0;
    if (op == "+" || op == "-" || op == "*") {
        const bool overflow = op == "+"   ? __builtin_add_overflow(x, y, &result)
                              : op == "-" ? __builtin_sub_overflow(x, y, &result)
                                          : __builtin_mul_overflow(x, y, &result);
        if (overflow) return make_error("integer overflow in '{}'", op);
        return Value(result);
    }
    if (op == "/") {
        if (y == 0) return make_error("division by zero");
        return Value(static_cast<double>(x) / static_cast<double>(y));
    }
    if (op == "//" || op == "%") {
        if (y == 0) return make_error("integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) return make_error("integer overflow in '{}'", op);
        int64_t quotient = x / y;
        int64_t remainder = x % y;
        if (remainder != 0 && ((remainder < 0) != (y < 0))) {  // Python floors toward -inf
            --quotient;
            remainder += y;
        }
        return Value(op == "//" ? quotient : remainder);
    }
    // "**"
    if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
    result = 1;
    for (int64_t i = 0; i < y; ++i) {
        if (__builtin_mul_overflow(result, x, &result)) return make_error("integer overflow in '**'");
        if (result == 0 || result == 1) break;
    }
    return Value(result);
}

Result<Value> float_arithmetic(std::string_view op, double x, double y) {
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "**") return Value(std::pow(x, y));
    if (y == 0.0) return make_error("float division by zero");
    if (op == "/") return Value(x / y);
    const double quotient = std::floor(x / y);
    if (op == "//") return Value(quotient);
    double remainder = std::fmod(x, y);
    if (remainder != 0.0 && ((remainder < 0) != (y < 0))) remainder += y;
    return Value(remainder);
}

}  // namespace

Result<Value> arithmetic(std::string_view op, const Value& a, const Value& b) {
    if (a.is_undefined()) return undefined_error(a);
    if (b.is_undefined()) return undefined_error(b);
    if (a.is_number() && b.is_number()) {
        if (a.kind() == ValueKind::Float || b.kind() == ValueKind::Float)
            return float_arithmetic(op, a.to_double(), b.to_double());
        return integer_arithmetic(op, int_of(a), int_of(b));
    }
    if (op == "+" && a.kind() == b.kind()) {
        LMRUN_RETURN_IF_ERROR(
            check_value_bytes(saturating_add(a.size_bytes(), b.size_bytes()), "the result of '+'"));
        if (a.is_string()) return Value(a.as_string() + b.as_string());
        if (a.kind() == ValueKind::List) {
            LMRUN_RETURN_IF_ERROR(
                check_list_items(a.as_list().size() + b.as_list().size(), "the result of '+'"));
            ValueList items = a.as_list();
            items.insert(items.end(), b.as_list().begin(), b.as_list().end());
            return Value::list(std::move(items));
        }
    }
    if (op == "*") {
        const bool a_sequence = a.is_string() || a.kind() == ValueKind::List;
        const bool b_sequence = b.is_string() || b.kind() == ValueKind::List;
        const bool a_int = a.kind() == ValueKind::Int || a.kind() == ValueKind::Bool;
        const bool b_int = b.kind() == ValueKind::Int || b.kind() == ValueKind::Bool;
        if (a_sequence && b_int) return repeat(a, int_of(b));
        if (b_sequence && a_int) return repeat(b, int_of(a));
    }
    if (op == "%" && a.is_string())
        return make_error("printf-style string formatting with '%' is not supported");
    return unsupported(op, a, b);
}

Result<BoundArgs> BoundArgs::bind(std::string_view function, const CallArgs& args,
                                  std::initializer_list<std::string_view> params) {
    BoundArgs bound;
    bound.function_ = std::string(function);
    bound.params_.assign(params.begin(), params.end());
    bound.values_.resize(params.size());
    if (args.positional.size() > params.size())
        return make_error("{}() takes at most {} arguments ({} given)", function, params.size(),
                          args.positional.size());
    for (size_t i = 0; i < args.positional.size(); ++i) bound.values_[i] = args.positional[i];
    for (const auto& [name, value] : args.keyword) {
        size_t index = 0;
        while (index < bound.params_.size() && bound.params_[index] != name) ++index;
        if (index == bound.params_.size())
            return make_error("{}() got an unexpected keyword argument '{}'", function, name);
        if (index < args.positional.size())
            return make_error("{}() got multiple values for argument '{}'", function, name);
        bound.values_[index] = value;
    }
    return bound;
}

Result<int64_t> BoundArgs::get_int(size_t index, int64_t fallback) const {
    const Value& value = values_[index];
    if (!given(index) || value.is_none()) return fallback;
    if (value.kind() == ValueKind::Int) return value.as_int();
    if (value.kind() == ValueKind::Bool) return int64_t{value.as_bool()};
    return make_error("{}(): argument '{}' must be an integer, not {}", function_, params_[index],
                      type_name(value.kind()));
}

Result<std::string> BoundArgs::get_string(size_t index, const std::string& fallback) const {
    const Value& value = values_[index];
    if (!given(index) || value.is_none()) return fallback;
    if (value.is_string()) return value.as_string();
    return make_error("{}(): argument '{}' must be a string, not {}", function_, params_[index],
                      type_name(value.kind()));
}

}  // namespace lmrun::jinja
