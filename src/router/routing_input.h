// What the router reads of a request to route it, without validating it (the worker does
// that and its errors pass through unchanged): the prompt as text, for the PrefixTree; a
// session key; and an estimate of the tokens it adds to a worker's load.
//
// Prompt text: /v1/completions' "prompt" (the first one of a batch; token ids written as
// decimal numbers); /v1/chat/completions' "messages" flattened in order (role, name and
// the text of the content, separated by control bytes: the same bytes inside a message
// can only make the tree's guess worse, never a request wrong). A conversation's next
// turn resends the history, so its text extends the previous turn's, as its tokens would.
// Session key: the X-Session-ID header, else the body's "user" string.
// A body that is not JSON (or too deep) gives no text and no key: the request is routed
// like any other and the worker answers the error.
#pragma once

#include <cstdint>
#include <string>

#include "server/http_exchange.h"

namespace lmrun::router {

struct RoutingInput {
    std::string prompt_text;
    std::string session_key;
    int64_t estimated_tokens = 0;  // prompt tokens, estimated at 4 bytes each for text
};

RoutingInput read_routing_input(const server::HttpRequest& request);

}  // namespace lmrun::router
