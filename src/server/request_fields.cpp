#include "server/request_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace lmrun::server {

using Json = nlohmann::ordered_json;

const Json* find_field(const Json& object, std::string_view name) {
    if (!object.is_object()) return nullptr;
    auto it = object.find(name);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
}

ApiError wrong_type(const std::string& name, const char* expected) {
    return invalid_request(name + " must be " + expected, name);
}

bool to_integer(const Json& value, int64_t& out) {
    if (value.is_number_unsigned()) {
        const uint64_t number = value.get<uint64_t>();
        if (number > uint64_t(std::numeric_limits<int64_t>::max())) return false;
        out = int64_t(number);
        return true;
    }
    if (value.is_number_integer()) {
        out = value.get<int64_t>();
        return true;
    }
    if (!value.is_number_float()) return false;
    // Some clients send 2.0; past 2^53 a double no longer holds every integer.
    const double number = value.get<double>();
    if (!std::isfinite(number) || std::floor(number) != number || std::fabs(number) > 9007199254740992.0)
        return false;
    out = int64_t(number);
    return true;
}

MaybeError read_bool(const Json& object, const char* name, bool& out) {
    const Json* value = find_field(object, name);
    if (!value) return std::nullopt;
    if (!value->is_boolean()) return wrong_type(name, "a boolean");
    out = value->get<bool>();
    return std::nullopt;
}

MaybeError read_string(const Json& object, const char* name, std::string& out) {
    const Json* value = find_field(object, name);
    if (!value) return std::nullopt;
    if (!value->is_string()) return wrong_type(name, "a string");
    out = value->get<std::string>();
    return std::nullopt;
}

MaybeError read_float(const Json& object, const char* name, float& out) {
    const Json* value = find_field(object, name);
    if (!value) return std::nullopt;
    if (!value->is_number()) return wrong_type(name, "a number");
    const double number = value->get<double>();
    if (!(std::fabs(number) <= double(std::numeric_limits<float>::max())))
        return invalid_request(fmt::format("{} is out of range: {}", name, number), name);
    out = float(number);
    return std::nullopt;
}

MaybeError read_int(const Json& object, const char* name, int64_t min, int64_t max, int64_t& out,
                    bool* given) {
    const Json* value = find_field(object, name);
    if (!value) return std::nullopt;
    int64_t number = 0;
    if (!to_integer(*value, number) || number < min || number > max) {
        // A number is quoted back; anything else by its type only (it may be large).
        const std::string sent = value->is_number() ? value->dump() : std::string("a ") + value->type_name();
        return invalid_request(fmt::format("{} must be an integer in [{}, {}], got {}", name, min, max, sent),
                               name);
    }
    out = number;
    if (given) *given = true;
    return std::nullopt;
}

MaybeError read_int(const Json& object, const char* name, int64_t min, int64_t max, int32_t& out,
                    bool* given) {
    int64_t wide = out;
    if (MaybeError error = read_int(object, name, std::max(min, int64_t(std::numeric_limits<int32_t>::min())),
                                    std::min(max, int64_t(std::numeric_limits<int32_t>::max())), wide, given))
        return error;
    out = int32_t(wide);
    return std::nullopt;
}

}  // namespace lmrun::server
