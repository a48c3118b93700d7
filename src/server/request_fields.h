// Typed, range-checked reads of request JSON fields, shared by every endpoint. A field of
// the wrong type or out of its range is an ApiError naming the field (400); nothing here
// throws, and every integer is checked against its range before any arithmetic uses it.
// A present field whose value is null counts as absent, as in the OpenAI API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace lmrun::server {

using MaybeError = std::optional<ApiError>;

// The field when `object` is an object holding it with a non-null value.
const nlohmann::ordered_json* find_field(const nlohmann::ordered_json& object, std::string_view name);

ApiError wrong_type(const std::string& name, const char* expected);

// An integer (2.0 counts, 2.5 does not) within int64.
bool to_integer(const nlohmann::ordered_json& value, int64_t& out);

// Each leaves `out` untouched when the field is absent; `given` (optional) is set when present.
MaybeError read_bool(const nlohmann::ordered_json& object, const char* name, bool& out);
MaybeError read_string(const nlohmann::ordered_json& object, const char* name, std::string& out);
// A number that fits a float (1e300 does not).
MaybeError read_float(const nlohmann::ordered_json& object, const char* name, float& out);
// An integer in [min, max]; the error names the field, the range and the value sent.
MaybeError read_int(const nlohmann::ordered_json& object, const char* name, int64_t min, int64_t max,
                    int64_t& out, bool* given = nullptr);
MaybeError read_int(const nlohmann::ordered_json& object, const char* name, int64_t min, int64_t max,
                    int32_t& out, bool* given = nullptr);

}  // namespace lmrun::server
