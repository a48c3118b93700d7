// HttpServerOptions: where an HTTP front listens and how it bounds its clients. Shared by
// `lmrun serve` (HttpServer) and the router's front (RouterServerOptions extends it), so both
// take the same limits with the same defaults.
#pragma once

#include <cstddef>
#include <string>

namespace lmrun::server {

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    int port = 8000;      // 0 = any free port (bind() returns it)
    std::string api_key;  // empty = no auth
    bool allow_unauthenticated_tokenize = false;
    int http_threads = 4;  // workers: parse, tokenize, build responses
    size_t max_request_body_bytes = size_t(64) << 20;
    int max_connections = 1024;
    int idle_timeout_seconds = 10;        // a connection with no byte either way for this long is closed
    double request_timeout_seconds = 30;  // headers and body of a request must arrive within this
};

}  // namespace lmrun::server
