// HttpServer: the OpenAI-compatible HTTP front end. Routes:
//   POST /v1/completions, POST /v1/chat/completions, GET /v1/models,
//   POST /tokenize, POST /detokenize, GET /health, GET /metrics, and GET /load (queued and
//   running tokens as JSON, for routers; 503 while draining).
// Bearer auth with an API key (see auth.h). The transport (http_transport.h) does the
// I/O on a few threads that never block; /health and /metrics are answered there at
// once, so they keep answering however busy the rest is (/load too). Everything else runs on a
// pool of http_threads workers that parse, validate, tokenize and build responses;
// generation waits for the engine thread without holding any thread.
//
// Lifecycle (http_server_lifecycle.h): bind() -> serve() (blocks) ; shutdown(timeout) from
// another thread: new generation requests get 503 and /health 503, in-flight requests may
// finish until the deadline, what is left is then aborted, every connection (slow clients
// included) is closed, and serve() returns. shutdown() returns within the timeout (plus the time a
// handler already running needs to finish, e.g. tokenizing one request).
#pragma once

#include <memory>

#include "core/result.h"
#include "server/async_engine.h"
#include "server/auth.h"
#include "server/http_server_lifecycle.h"
#include "server/http_server_options.h"
#include "server/http_transport.h"
#include "server/metrics.h"
#include "server/prompt_processor.h"
#include "server/worker_pool.h"

namespace lmrun::server {

struct EndpointContext;

class HttpServer {
  public:
    HttpServer(HttpServerOptions options, const PromptProcessor& prompts, AsyncEngine& engine,
               ServerMetrics& metrics);
    ~HttpServer();  // where EndpointContext is complete

    Result<int> bind();  // the bound port
    Status serve();      // until shutdown() has finished
    // True when every in-flight request finished before the deadline (none had to be cut off).
    bool shutdown(double timeout_seconds);

  private:
    void route(const std::shared_ptr<HttpExchange>& exchange);
    void on_completed(const HttpRequest& request, int status);

    const HttpServerOptions options_;
    const AuthPolicy auth_;
    AsyncEngine& engine_;
    ServerMetrics& metrics_;
    WorkerPool workers_;
    std::unique_ptr<EndpointContext> context_;
    HttpServerLifecycle lifecycle_;  // last: destroyed first, it stops the threads that use the rest
};

}  // namespace lmrun::server
