#include "server/auth.h"

#include <cstdint>

namespace lmrun::server {

bool constant_time_equals(std::string_view presented, std::string_view expected) {
    // Every byte of `expected` is visited and folded in; a length mismatch only sets a bit.
    // `volatile` keeps the compiler from turning the loop into an early-exit compare.
    volatile uint8_t difference = presented.size() == expected.size() ? 0 : 1;
    for (size_t i = 0; i < expected.size(); ++i) {
        const uint8_t presented_byte = i < presented.size() ? uint8_t(presented[i]) : 0;
        difference = difference | uint8_t(presented_byte ^ uint8_t(expected[i]));
    }
    return difference == 0;
}

bool needs_api_key(const AuthPolicy& policy, std::string_view path) {
    if (policy.api_key.empty()) return false;
    if (path.substr(0, 3) == "/v1") return true;
    if (path == "/tokenize" || path == "/detokenize") return !policy.allow_unauthenticated_tokenize;
    return false;
}

bool authorized(const AuthPolicy& policy, std::string_view path, std::string_view authorization_header) {
    if (!needs_api_key(policy, path)) return true;
    constexpr std::string_view kScheme = "Bearer ";
    if (authorization_header.substr(0, kScheme.size()) != kScheme) return false;  // says nothing of the key
    return constant_time_equals(authorization_header.substr(kScheme.size()), policy.api_key);
}

}  // namespace lmrun::server
