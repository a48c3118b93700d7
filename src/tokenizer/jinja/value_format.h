// Text forms of Values exactly as Python prints them: str() (what {{ x }}
// outputs), repr() (list/dict elements), float repr, and json.dumps with
// ensure_ascii=False and default separators (", " / ": ", or "," with indent),
// which is what Hugging Face's `tojson` filter produces.
#pragma once

#include <string>

#include "core/result.h"
#include "tokenizer/jinja/value.h"

namespace lmrun::jinja {

// Python repr(float): shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string format_python_float(double value);
// Python str(value); undefined prints as "".
std::string to_python_str(const Value& value);
std::string to_python_repr(const Value& value);
// json.dumps(value, ensure_ascii=False, indent=indent) (indent < 0: none).
// Undefined and callables are not serializable and give an error.
Result<std::string> to_json_text(const Value& value, int indent);

}  // namespace lmrun::jinja
