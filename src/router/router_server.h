// RouterServer: the router's OpenAI-compatible front, on the same HTTP transport, limits
// and API-key rules as `lmrun serve` (server/http_transport.h, server/auth.h): clients see
// one server. Routes:
//   POST /v1/completions, POST /v1/chat/completions, GET /v1/models, POST /tokenize,
//   POST /detokenize: passed to a worker (ProxyCall), streams without buffering;
//   GET /health: 200 while some worker is routable and the router is not draining;
//   GET /metrics: the workers' metrics summed (metrics_sum.h) and the router's own.
// The request body is read by a worker thread (to route it), never on the I/O thread.
//
// Lifecycle as HttpServer's (server/http_server_lifecycle.h): bind() -> serve() (blocks) ;
// shutdown(timeout) from another thread: new requests get 503, calls in flight may finish
// until the deadline, the rest are then cut off (503, or an error event for a stream), and
// serve() returns.
#pragma once

#include <memory>

#include "core/result.h"
#include "router/proxy_call.h"
#include "router/router.h"
#include "router/upstream_client.h"
#include "server/auth.h"
#include "server/http_server_lifecycle.h"
#include "server/http_server_options.h"
#include "server/http_transport.h"
#include "server/worker_pool.h"

namespace lmrun::router {

// The front's listening and client limits are `lmrun serve`'s, with the same defaults.
struct RouterServerOptions : server::HttpServerOptions {
    double metrics_timeout_seconds = 2;  // each worker's /metrics, when the router's is scraped
    ProxyOptions proxy;
};

class RouterServer {
  public:
    RouterServer(RouterServerOptions options, Router& router, UpstreamClient& client);

    Result<int> bind();
    Status serve();
    // True when every call in flight finished before the deadline.
    bool shutdown(double timeout_seconds);
    // A worker was taken out: its calls are interrupted (retried elsewhere, or streams failed).
    void on_worker_down(int32_t worker_id);

  private:
    void route(const std::shared_ptr<server::HttpExchange>& exchange);
    void answer_metrics(const std::shared_ptr<server::HttpExchange>& exchange);
    void on_completed(const server::HttpRequest& request, int status);

    const RouterServerOptions options_;
    const server::AuthPolicy auth_;
    Router& router_;
    UpstreamClient& client_;
    server::WorkerPool workers_;
    CallRegistry calls_;
    ProxyContext context_;
    server::HttpServerLifecycle lifecycle_;  // last: destroyed first, it stops the threads that use the rest
};

}  // namespace lmrun::router
