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
// The json.dumps keyword arguments HF's tojson exposes.
struct JsonOptions {
    int indent = -1;                    // < 0: None (single line)
    std::string item_separator = ", ";  // Python uses "," when indent is set
    std::string key_separator = ": ";
    bool sort_keys = false;
    bool ensure_ascii = false;
};
// json.dumps(value, ...). Undefined and callables are not serializable.
Result<std::string> to_json_text(const Value& value, const JsonOptions& options);

}  // namespace lmrun::jinja
