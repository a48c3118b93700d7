// The dynamic value type of the Jinja interpreter: Python-like undefined, None,
// bool, int (int64), float (double), str (UTF-8), list, dict (insertion-ordered,
// string keys), namespace (the only mutable object) and callables.
// Strings, lists and dicts are immutable and shared, so copying a Value is cheap
// (a list of a thousand references to one long string holds that string once).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace lmrun::jinja {

class Value;
class Interpreter;

using ValueList = std::vector<Value>;

// Insertion-ordered string-keyed map, as Python dicts built from JSON are.
struct ValueDict {
    std::vector<std::pair<std::string, Value>> entries;

    const Value* find(std::string_view key) const;
    void set(std::string key, Value value);  // replaces in place or appends
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

// Builtin functions and macros. The interpreter is passed so macros can render.
using NativeFunction = std::function<Result<Value>(const CallArgs& args, Interpreter& interpreter)>;

struct Callable {
    std::string name;
    NativeFunction function;
};

enum class ValueKind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

class Value {
  public:
    Value() = default;  // undefined
    Value(bool value) : kind_(ValueKind::Bool), data_(value) {}
    Value(int64_t value) : kind_(ValueKind::Int), data_(value) {}
    Value(int value) : Value(static_cast<int64_t>(value)) {}
    Value(double value) : kind_(ValueKind::Float), data_(value) {}
    Value(std::string value)
        : kind_(ValueKind::String),
          size_bytes_(value.size()),
          data_(std::make_shared<const std::string>(std::move(value))) {}
    Value(std::string_view value) : Value(std::string(value)) {}
    Value(const char* value) : Value(std::string(value)) {}

    // `hint` names the missing variable or attribute for error messages.
    static Value undefined(std::string hint);
    static Value none();
    static Value list(ValueList items);
    static Value dict(ValueDict dict);
    static Value make_namespace(ValueDict attributes);
    static Value callable(std::string name, NativeFunction function);
    // Fails beyond kMaxDepth nested containers (hostile requests must not
    // overflow the stack of the recursive algorithms here).
    static Result<Value> from_json(const nlohmann::ordered_json& json);

    // Nesting limit of lists/dicts; containers record their depth (scalars: 0).
    static constexpr uint32_t kMaxDepth = 256;
    uint32_t depth() const { return depth_; }
    // Logical size: a string's bytes, or what a list or dict holds counted as if nothing were
    // shared (16 bytes per entry plus keys and items), saturating at UINT64_MAX. What
    // formatting or comparing the value may cost; a namespace counts as 16 bytes.
    uint64_t size_bytes() const { return size_bytes_; }

    ValueKind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == ValueKind::Undefined; }
    bool is_none() const { return kind_ == ValueKind::None; }
    bool is_string() const { return kind_ == ValueKind::String; }
    bool is_number() const {
        return kind_ == ValueKind::Int || kind_ == ValueKind::Float || kind_ == ValueKind::Bool;
    }

    bool as_bool() const { return std::get<bool>(data_); }
    int64_t as_int() const { return std::get<int64_t>(data_); }
    double as_float() const { return std::get<double>(data_); }
    // Int, Float or Bool as a double (Python's numeric tower).
    double to_double() const;
    const std::string& as_string() const { return *std::get<std::shared_ptr<const std::string>>(data_); }
    const ValueList& as_list() const { return *std::get<std::shared_ptr<const ValueList>>(data_); }
    const ValueDict& as_dict() const;  // Dict or Namespace
    ValueDict& namespace_attributes() const { return *std::get<std::shared_ptr<ValueDict>>(data_); }
    const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
    // "" when the undefined value carries no hint (a default-constructed Value).
    const std::string& undefined_hint() const;

    // Python truthiness; undefined is false.
    bool truthy() const;

  private:
    ValueKind kind_ = ValueKind::Undefined;
    uint32_t depth_ = 0;
    uint64_t size_bytes_ = 8;
    // std::string: the hint of an undefined value; strings themselves are shared.
    std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<const std::string>,
                 std::shared_ptr<const ValueList>, std::shared_ptr<const ValueDict>,
                 std::shared_ptr<ValueDict>, std::shared_ptr<const Callable>>
        data_;
};

// Python ==: numbers compare by value across int/float/bool, containers deeply,
// undefined equals only undefined.
bool values_equal(const Value& a, const Value& b);
// Python <: numbers or strings (code point order == UTF-8 byte order) or lists.
Result<bool> value_less(const Value& a, const Value& b);
// Python type name for error messages ("str", "int", "dict", ...).
const char* type_name(ValueKind kind);

}  // namespace lmrun::jinja
