// RouterServer: the router's OpenAI-compatible front, on the same HTTP transport, limits
// and API-key rules as `lmrun serve` (server/http_transport.h, server/auth.h): clients see
// one server. Routes:
//   POST /v1/completions, POST /v1/chat/completions, GET /v1/models, POST /tokenize,
//   POST /detokenize: passed to a worker (ProxyCall), streams without buffering;
//   GET /health: 200 while some worker is routable and the router is not draining;
//   GET /metrics: the workers' metrics summed (metrics_sum.h) and the router's own.
// The request body is read by a worker thread (to route it), never on the I/O thread.
//
// Lifecycle as HttpServer's: bind() -> serve() (blocks) ; shutdown(timeout) from another
// thread: new requests get 503, calls in flight may finish until the deadline, the rest
// are then cut off (503, or an error event for a stream), and serve() returns.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.h"
#include "router/proxy_call.h"
#include "router/router.h"
#include "router/upstream_client.h"
#include "server/auth.h"
#include "server/http_transport.h"
#include "server/worker_pool.h"

namespace lmrun::router {

struct RouterServerOptions {
    std::string host = "127.0.0.1";
    int port = 8000;
    std::string api_key;
    bool allow_unauthenticated_tokenize = false;
    int http_threads = 4;
    size_t max_request_body_bytes = size_t(64) << 20;
    int max_connections = 1024;
    int idle_timeout_seconds = 10;
    double request_timeout_seconds = 30;
    double metrics_timeout_seconds = 2;  // each worker's /metrics, when the router's is scraped
    ProxyOptions proxy;
};

class RouterServer {
  public:
    RouterServer(RouterServerOptions options, Router& router, UpstreamClient& client);
    ~RouterServer();

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
    server::HttpTransport transport_;
    std::atomic<bool> draining_{false};

    std::mutex mutex_;
    std::condition_variable stopped_changed_;
    bool stopped_ = false;
};

}  // namespace lmrun::router
