// Jinja builtins available to templates: filters (`x | name(args)`), tests
// (`x is name(args)`), Python methods on str/dict/list (`s.startswith(...)`)
// and global functions (range, namespace, dict, raise_exception, strftime_now).
// Errors come back without a position; the evaluator adds it.
#pragma once

#include <string_view>
#include <unordered_map>

#include "core/result.h"
#include "tokenizer/jinja/value.h"

namespace lmrun::jinja {

// Names the parser accepts, so unknown filters/tests fail at parse time as in Jinja.
bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

Result<Value> apply_filter(std::string_view name, const Value& operand, const CallArgs& args,
                           Interpreter& interpreter);
Result<bool> apply_test(std::string_view name, const Value& operand, const CallArgs& args);

// True when `object.name(...)` is a supported Python method call.
bool has_method(const Value& object, std::string_view name);
Result<Value> call_method(const Value& object, std::string_view name, const CallArgs& args);

void add_builtin_globals(std::unordered_map<std::string, Value>& frame);

}  // namespace lmrun::jinja
