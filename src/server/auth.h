// API-key authentication: with a key set, /v1/* and also /tokenize and /detokenize need
// "Authorization: Bearer KEY" (vLLM leaves the latter two open; they run the tokenizer and
// the chat template on arbitrary input, so here they are opened only on request, with
// allow_unauthenticated_tokenize). /health and /metrics stay open for probes and scrapers.
// The key is compared in time that does not depend on the presented value's bytes, so
// response times do not reveal how much of a guess was right.
#pragma once

#include <string>
#include <string_view>

namespace lmrun::server {

struct AuthPolicy {
    std::string api_key;  // empty: no authentication
    bool allow_unauthenticated_tokenize = false;
};

// Compares every byte of `expected` whatever `presented` holds; its time depends only on
// expected.size().
bool constant_time_equals(std::string_view presented, std::string_view expected);

bool needs_api_key(const AuthPolicy& policy, std::string_view path);
bool authorized(const AuthPolicy& policy, std::string_view path, std::string_view authorization_header);

}  // namespace lmrun::server
