// Python semantics of the operations on Values that expressions and builtins
// share: iteration, attribute/item access, slicing, `in`, arithmetic, and
// binding call arguments to a Python-style parameter list.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "tokenizer/jinja/render_budget.h"
#include "tokenizer/jinja/value.h"

namespace lmrun::jinja {

// Jinja's sandbox caps range() at 100000 items; every other value is bounded by
// kMaxValueBytes and kMaxListItems (render_budget.h).
inline constexpr int64_t kMaxRangeItems = 100000;

// The error for using an undefined value where Jinja raises UndefinedError.
Error undefined_error(const Value& value);

// Items of a list, keys of a dict, code points of a string; undefined is empty. Spends a
// step per item; a string of more than kMaxListItems code points is an error.
Result<ValueList> iterate(const Value& value);
// obj.name for dicts and namespaces; undefined (with a hint) otherwise.
Value get_attribute(const Value& object, const std::string& name);
// obj[index] with negative indices; out of range or missing key: undefined.
Result<Value> get_item(const Value& object, const Value& index);
// obj[start:stop:step] on lists and strings; undefined/None bounds are open.
Result<Value> slice_value(const Value& object, const Value& start, const Value& stop, const Value& step);
// Python `item in container`.
Result<bool> contains(const Value& container, const Value& item);
// + - * / // % ** on numbers, + on strings and lists, * repetition (results bounded by
// kMaxValueBytes and kMaxListItems).
Result<Value> arithmetic(std::string_view op, const Value& a, const Value& b);

// Python-style binding of positional and keyword arguments to named parameters.
class BoundArgs {
  public:
    static Result<BoundArgs> bind(std::string_view function, const CallArgs& args,
                                  std::initializer_list<std::string_view> params);
    // Undefined when the argument was not given.
    const Value& operator[](size_t index) const { return values_[index]; }
    bool given(size_t index) const { return !values_[index].is_undefined(); }
    Result<int64_t> get_int(size_t index, int64_t fallback) const;
    Result<std::string> get_string(size_t index, const std::string& fallback) const;

  private:
    std::string function_;
    std::vector<std::string_view> params_;
    std::vector<Value> values_;
};

}  // namespace lmrun::jinja
