#include "tokenizer/jinja/value.h"

#include <algorithm>

#include "tokenizer/jinja/render_budget.h"

namespace lmrun::jinja {

const Value* ValueDict::find(std::string_view key) const {
    for (const auto& [name, value] : entries)
        if (name == key) return &value;
    return nullptr;
}

void ValueDict::set(std::string key, Value value) {
    for (auto& [name, existing] : entries) {
        if (name == key) {
            existing = std::move(value);
            return;
        }
    }
    entries.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
    Value value;
    value.data_ = std::move(hint);
    return value;
}

const std::string& Value::undefined_hint() const {
    static const std::string kNoHint;
    const std::string* hint = std::get_if<std::string>(&data_);
    return hint != nullptr ? *hint : kNoHint;
}

Value Value::none() {
    Value value;
    value.kind_ = ValueKind::None;
    return value;
}

namespace {

constexpr uint64_t kEntryBytes = 16;

// What a list or dict holds: its deepest item's depth, and per entry its bytes (a key's
// included) on top of the item's own.
struct ContainerExtent {
    uint32_t item_depth = 0;
    uint64_t size_bytes = 0;

    void add(const Value& item, size_t key_bytes) {
        item_depth = std::max(item_depth, item.depth());
        size_bytes = saturating_add(size_bytes, saturating_add(kEntryBytes + key_bytes, item.size_bytes()));
    }
};

}  // namespace

Value Value::list(ValueList items) {
    Value value;
    value.kind_ = ValueKind::List;
    ContainerExtent extent;
    for (const Value& item : items) extent.add(item, 0);
    value.depth_ = extent.item_depth + 1;
    value.size_bytes_ = extent.size_bytes;
    value.data_ = std::make_shared<const ValueList>(std::move(items));
    return value;
}

Value Value::dict(ValueDict dict) {
    Value value;
    value.kind_ = ValueKind::Dict;
    ContainerExtent extent;
    for (const auto& entry : dict.entries) extent.add(entry.second, entry.first.size());
    value.depth_ = extent.item_depth + 1;
    value.size_bytes_ = extent.size_bytes;
    value.data_ = std::make_shared<const ValueDict>(std::move(dict));
    return value;
}

Value Value::make_namespace(ValueDict attributes) {
    Value value;
    value.kind_ = ValueKind::Namespace;
    value.size_bytes_ = kEntryBytes;
    // Namespaces are mutable: the interpreter checks the depth of what is assigned.
    value.depth_ = 1;
    value.data_ = std::make_shared<ValueDict>(std::move(attributes));
    return value;
}

Value Value::callable(std::string name, NativeFunction function) {
    Value value;
    value.kind_ = ValueKind::Callable;
    value.data_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(function)});
    return value;
}

namespace {

Result<Value> from_json_at(const nlohmann::ordered_json& json, uint32_t depth) {
    using Type = nlohmann::ordered_json::value_t;
    if (depth > Value::kMaxDepth)
        return make_error("JSON value nested deeper than {} levels", Value::kMaxDepth);
    switch (json.type()) {
        case Type::null:
        case Type::discarded:
        case Type::binary:
            return Value::none();
        case Type::boolean:
            return Value(json.get<bool>());
        case Type::number_integer:
            return Value(json.get<int64_t>());
        case Type::number_unsigned: {
            const uint64_t unsigned_value = json.get<uint64_t>();
            // Beyond int64 we lose Python's big ints; a float keeps the magnitude.
            if (unsigned_value > static_cast<uint64_t>(INT64_MAX))
                return Value(static_cast<double>(unsigned_value));
            return Value(static_cast<int64_t>(unsigned_value));
        }
        case Type::number_float:
            return Value(json.get<double>());
        case Type::string:
            return Value(json.get<std::string>());
        case Type::array: {
            ValueList items;
            items.reserve(json.size());
            for (const auto& item : json) {
                LMRUN_ASSIGN_OR_RETURN(Value value, from_json_at(item, depth + 1));
                items.push_back(std::move(value));
            }
            return Value::list(std::move(items));
        }
        case Type::object: {
            ValueDict dict;
            dict.entries.reserve(json.size());
            for (const auto& [key, item] : json.items()) {
                LMRUN_ASSIGN_OR_RETURN(Value value, from_json_at(item, depth + 1));
                dict.entries.emplace_back(key, std::move(value));
            }
            return Value::dict(std::move(dict));
        }
    }
    return Value::none();
}

}  // namespace

Result<Value> Value::from_json(const nlohmann::ordered_json& json) {
    return from_json_at(json, 1);
}

double Value::to_double() const {
    switch (kind_) {
        case ValueKind::Int:
            return static_cast<double>(as_int());
        case ValueKind::Float:
            return as_float();
        case ValueKind::Bool:
            return as_bool() ? 1.0 : 0.0;
        default:
            return 0.0;
    }
}

const ValueDict& Value::as_dict() const {
    if (kind_ == ValueKind::Namespace) return *std::get<std::shared_ptr<ValueDict>>(data_);
    return *std::get<std::shared_ptr<const ValueDict>>(data_);
}

bool Value::truthy() const {
    switch (kind_) {
        case ValueKind::Undefined:
        case ValueKind::None:
            return false;
        case ValueKind::Bool:
            return as_bool();
        case ValueKind::Int:
            return as_int() != 0;
        case ValueKind::Float:
            return as_float() != 0.0;
        case ValueKind::String:
            return !as_string().empty();
        case ValueKind::List:
            return !as_list().empty();
        case ValueKind::Dict:
            return !as_dict().entries.empty();
        case ValueKind::Namespace:
        case ValueKind::Callable:
            return true;
    }
    return false;
}

namespace {

// Int or Bool as an integer (True == 1 in Python).
int64_t integer_of(const Value& value) {
    return value.kind() == ValueKind::Bool ? (value.as_bool() ? 1 : 0) : value.as_int();
}

}  // namespace

bool values_equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.kind() != ValueKind::Float && b.kind() != ValueKind::Float)
            return integer_of(a) == integer_of(b);
        return a.to_double() == b.to_double();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case ValueKind::Undefined:
        case ValueKind::None:
            return true;
        case ValueKind::String:
            return a.as_string() == b.as_string();
        case ValueKind::List: {
            const ValueList& x = a.as_list();
            const ValueList& y = b.as_list();
            if (&x == &y) return true;  // shared: nested shared lists would cost their logical size
            if (x.size() != y.size()) return false;
            // An exhausted budget stops the walk; the render fails at its next check.
            if (!spend_steps(int64_t(x.size()))) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!values_equal(x[i], y[i])) return false;
            return true;
        }
        case ValueKind::Dict: {
            const ValueDict& x = a.as_dict();
            const ValueDict& y = b.as_dict();
            if (&x == &y) return true;
            if (x.entries.size() != y.entries.size()) return false;
            // find() is linear: comparing two dicts of n keys visits n * n entries.
            const auto num_entries = static_cast<int64_t>(x.entries.size());
            if (!spend_steps(num_entries * num_entries)) return false;
            for (const auto& [key, value] : x.entries) {
                const Value* other = y.find(key);
                if (other == nullptr || !values_equal(value, *other)) return false;
            }
            return true;
        }
        case ValueKind::Namespace:
            return &a.namespace_attributes() == &b.namespace_attributes();
        case ValueKind::Callable:
            return &a.as_callable() == &b.as_callable();
        case ValueKind::Bool:
        case ValueKind::Int:
        case ValueKind::Float:
            return false;  // handled above
    }
    return false;
}

Result<bool> value_less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.kind() != ValueKind::Float && b.kind() != ValueKind::Float) {
            return integer_of(a) < integer_of(b);
        }
        return a.to_double() < b.to_double();
    }
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
    if (a.kind() == ValueKind::List && b.kind() == ValueKind::List) {
        const ValueList& x = a.as_list();
        const ValueList& y = b.as_list();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!spend_steps(1)) return false;
            if (values_equal(x[i], y[i])) continue;
            return value_less(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    return make_error("'<' not supported between instances of '{}' and '{}'", type_name(a.kind()),
                      type_name(b.kind()));
}

const char* type_name(ValueKind kind) {
    switch (kind) {
        case ValueKind::Undefined:
            return "Undefined";
        case ValueKind::None:
            return "NoneType";
        case ValueKind::Bool:
            return "bool";
        case ValueKind::Int:
            return "int";
        case ValueKind::Float:
            return "float";
        case ValueKind::String:
            return "str";
        case ValueKind::List:
            return "list";
        case ValueKind::Dict:
            return "dict";
        case ValueKind::Namespace:
            return "Namespace";
        case ValueKind::Callable:
            return "function";
    }
    return "object";
}

}  // namespace lmrun::jinja
