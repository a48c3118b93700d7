#include "router/router_server.h"

#include <algorithm>

#include "core/logging.h"
#include "router/metrics_sum.h"
#include "server/api_error.h"

namespace lmrun::router {
namespace {

using server::ApiError;
using server::HttpResponse;

constexpr const char* kProxiedRoutes[][2] = {
    {"POST", "/v1/completions"}, {"POST", "/v1/chat/completions"}, {"GET", "/v1/models"},
    {"POST", "/tokenize"},       {"POST", "/detokenize"},
};

// The workers' /metrics, gathered for one scrape of the router's.
struct MetricsGather {
    std::shared_ptr<server::HttpExchange> exchange;
    Router* router = nullptr;
    std::mutex mutex;
    std::vector<std::string> texts;
    size_t pending = 0;

    void add(std::string text) {
        std::vector<std::string> all;
        {
            std::lock_guard lock(mutex);
            if (!text.empty()) texts.push_back(std::move(text));
            if (--pending > 0) return;
            all.swap(texts);
        }
        HttpResponse response;
        response.content_type = "text/plain; version=0.0.4; charset=utf-8";
        response.body = sum_prometheus_texts(all) + router->render_metrics();
        exchange->respond(std::move(response));
    }
};

}  // namespace

RouterServer::RouterServer(RouterServerOptions options, Router& router, UpstreamClient& client)
    : options_(std::move(options)),
      auth_{options_.api_key, options_.allow_unauthenticated_tokenize},
      router_(router),
      client_(client),
      workers_(options_.http_threads),
      context_{router_, client_,        workers_,
               calls_,  options_.proxy, [this](int32_t worker_id) { on_worker_down(worker_id); }},
      lifecycle_(
          options_,
          server::TransportHooks{
              [this](const std::shared_ptr<server::HttpExchange>& exchange) { route(exchange); },
              [this](const server::HttpRequest& request, int status) { on_completed(request, status); },
              {}},
          workers_) {}

Result<int> RouterServer::bind() {
    return lifecycle_.bind();
}

Status RouterServer::serve() {
    return lifecycle_.serve();
}

void RouterServer::on_worker_down(int32_t worker_id) {
    for (const auto& call : calls_.all())
        if (call->worker_id() == worker_id) call->interrupt(Interruption::WorkerDown);
}

// On an I/O thread: cheap answers here, the rest on a worker.
void RouterServer::route(const std::shared_ptr<server::HttpExchange>& exchange) {
    const server::HttpRequest& request = exchange->request();
    if (request.method == "GET" && request.path == "/health") {
        HttpResponse response;
        response.status = !lifecycle_.draining() && router_.num_routable() > 0 ? 200 : 503;
        return exchange->respond(std::move(response));
    }
    if (request.method == "GET" && request.path == "/metrics") return answer_metrics(exchange);
    if (!server::authorized(auth_, request.path, request.header("authorization")))
        return exchange->respond(server::error_response(server::unauthorized()));
    const bool proxied = std::any_of(
        std::begin(kProxiedRoutes), std::end(kProxiedRoutes),
        [&](const auto& route) { return request.method == route[0] && request.path == route[1]; });
    if (!proxied) {
        return exchange->respond(
            server::error_response(ApiError{404,
                                            "no route for " + request.method + " " + request.path,
                                            "invalid_request_error",
                                            "",
                                            "not_found",
                                            {}}));
    }
    if (lifecycle_.draining())
        return exchange->respond(server::error_response(server::unavailable("the router is shutting down")));
    auto call = std::make_shared<ProxyCall>(context_, exchange);
    if (!workers_.post([call] { call->start(); }))
        exchange->respond(server::error_response(server::unavailable("the router is shutting down")));
}

void RouterServer::answer_metrics(const std::shared_ptr<server::HttpExchange>& exchange) {
    auto gather = std::make_shared<MetricsGather>();
    gather->exchange = exchange;
    gather->router = &router_;
    std::vector<WorkerStatus> targets;
    for (const WorkerStatus& worker : router_.workers())
        if (worker.listed && worker.healthy) targets.push_back(worker);
    gather->pending = targets.size() + 1;  // + this function's own share, released last
    for (const WorkerStatus& worker : targets) {
        UpstreamRequest request;
        request.url = worker.url + "/metrics";
        request.connect_timeout_seconds = options_.metrics_timeout_seconds;
        request.timeout_seconds = options_.metrics_timeout_seconds;
        client_.submit(std::move(request), buffered_handler([gather](BufferedResponse response) {
                           const bool ok = response.result.failure == UpstreamFailure::None &&
                                           response.result.status == 200;
                           gather->add(ok ? std::move(response.body) : std::string());
                       }));
    }
    gather->add({});
}

void RouterServer::on_completed(const server::HttpRequest& request, int status) {
    if (status == 0 || request.path == "/health" || request.path == "/metrics") return;
    router_.count_response(status);
    if (status >= 500) log_info("{} {} -> {}", request.method, request.path, status);
}

bool RouterServer::shutdown(double timeout_seconds) {
    const server::ShutdownDeadline shutdown = lifecycle_.begin_shutdown(timeout_seconds);
    // Calls in flight get the time up to the cut-off, the rest is a reserve for cutting them off.
    const auto no_calls = [&] { return calls_.size() == 0; };
    const bool drained = server::poll_until(no_calls, shutdown.cut_off);
    if (!drained) {
        const std::vector<std::shared_ptr<ProxyCall>> left = calls_.all();
        log_warn("shutdown: the deadline is reached; aborting {} unfinished sequences (requests in flight)",
                 left.size());
        for (const auto& call : left) call->interrupt(Interruption::Stopping);
        server::poll_until(no_calls, shutdown.deadline);
    }
    return lifecycle_.finish(shutdown) && drained;
}

}  // namespace lmrun::router
