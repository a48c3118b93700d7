// HttpServer: the OpenAI-compatible HTTP front end (cpp-httplib). Routes:
//   POST /v1/completions, POST /v1/chat/completions, GET /v1/models,
//   POST /tokenize, POST /detokenize, GET /health, GET /metrics.
// Optional bearer auth on /v1/*. A worker pool of http_threads threads serves
// connections, so that many concurrent streaming clients all progress; the
// threads only parse, validate, tokenize and stream (see async_engine.h).
//
// Lifecycle: bind() -> serve() (blocks) ; shutdown() from another thread: new
// requests get 503, in-flight ones may finish for grace_seconds, the rest are
// aborted, then serve() returns.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/result.h"
#include "server/async_engine.h"
#include "server/metrics.h"
#include "server/prompt_processor.h"

namespace httplib {
class Server;
}

namespace lmrun::server {

struct EndpointContext;

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    int port = 8000;         // 0 = any free port (bind() returns it)
    std::string api_key;     // empty = no auth
    int http_threads = 512;  // concurrent connections served at once
};

class HttpServer {
  public:
    HttpServer(HttpServerOptions options, const PromptProcessor& prompts, AsyncEngine& engine,
               ServerMetrics& metrics);
    ~HttpServer();

    Result<int> bind();  // the bound port
    void serve();
    void shutdown(double grace_seconds);

  private:
    void install_routes();
    bool authorized(const std::string& path, const std::string& authorization) const;

    HttpServerOptions options_;
    const PromptProcessor& prompts_;
    AsyncEngine& engine_;
    ServerMetrics& metrics_;
    std::unique_ptr<EndpointContext> context_;
    std::unique_ptr<httplib::Server> server_;
    std::atomic<bool> draining_{false};
    std::atomic<int64_t> num_active_requests_{0};  // between routing and the end of the response
};

}  // namespace lmrun::server
