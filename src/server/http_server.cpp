#include "server/http_server.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/logging.h"
#include "server/endpoint_context.h"

namespace lmrun::server {
namespace {

using Clock = std::chrono::steady_clock;

using ExchangeHandler = void (*)(EndpointContext&, const ExchangePtr&);

template <HttpResponse (*handler)(EndpointContext&, const HttpRequest&)>
void answer_at_once(EndpointContext& context, const ExchangePtr& exchange) {
    exchange->respond(handler(context, exchange->request()));
}

struct Route {
    const char* method;
    const char* path;
    ExchangeHandler handler;
};

constexpr Route kRoutes[] = {
    {"POST", "/v1/completions", handle_completions},
    {"POST", "/v1/chat/completions", handle_chat_completions},
    {"GET", "/v1/models", answer_at_once<handle_models>},
    {"POST", "/tokenize", answer_at_once<handle_tokenize>},
    {"POST", "/detokenize", answer_at_once<handle_detokenize>},
};

// GET /load: what a router needs to balance, cheap enough to poll every second.
HttpResponse load_response(const EngineGauges& gauges, bool draining) {
    HttpResponse response;
    response.status = draining ? 503 : 200;
    response.content_type = "application/json";
    response.body = fmt::format(
        "{{\"load_tokens\":{},\"num_running_tokens\":{},\"num_waiting_tokens\":{},\"num_running\":{},"
        "\"num_waiting\":{},\"kv_cache_usage\":{},\"kv_capacity_tokens\":{},\"prefix_cache_queries\":{},"
        "\"prefix_cache_hits\":{}}}",
        gauges.num_running_tokens + gauges.num_waiting_tokens, gauges.num_running_tokens,
        gauges.num_waiting_tokens, gauges.num_running, gauges.num_waiting, gauges.kv_cache_usage,
        gauges.kv_capacity_tokens, gauges.prefix_cache_queries, gauges.prefix_cache_hits);
    return response;
}

double seconds_until(Clock::time_point deadline) {
    return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, const PromptProcessor& prompts, AsyncEngine& engine,
                       ServerMetrics& metrics)
    : options_(std::move(options)),
      auth_{options_.api_key, options_.allow_unauthenticated_tokenize},
      engine_(engine),
      metrics_(metrics),
      workers_(options_.http_threads),
      context_(std::make_unique<EndpointContext>(EndpointContext{prompts, engine, metrics, workers_})),
      lifecycle_(
          options_,
          TransportHooks{[this](const ExchangePtr& exchange) { route(exchange); },
                         [this](const HttpRequest& request, int status) { on_completed(request, status); },
                         [this] { metrics_.count_dropped_connection(); }},
          workers_) {}

HttpServer::~HttpServer() = default;

Result<int> HttpServer::bind() {
    return lifecycle_.bind();
}

Status HttpServer::serve() {
    return lifecycle_.serve();
}

// On an I/O thread: cheap answers here, the rest on a worker.
void HttpServer::route(const ExchangePtr& exchange) {
    const HttpRequest& request = exchange->request();
    if (request.method == "GET" && request.path == "/health") {
        HttpResponse response;
        response.status = lifecycle_.draining() || !engine_.healthy() ? 503 : 200;
        return exchange->respond(std::move(response));
    }
    if (request.method == "GET" && request.path == "/load")
        return exchange->respond(load_response(metrics_.gauges(), lifecycle_.draining()));
    if (request.method == "GET" && request.path == "/metrics") {
        HttpResponse response;
        response.content_type = "text/plain; version=0.0.4; charset=utf-8";
        response.body = metrics_.render();
        return exchange->respond(std::move(response));
    }
    if (!authorized(auth_, request.path, request.header("authorization")))
        return exchange->respond(error_response(unauthorized()));
    const Route* route = nullptr;
    for (const Route& candidate : kRoutes)
        if (request.method == candidate.method && request.path == candidate.path) route = &candidate;
    if (!route) {
        return exchange->respond(
            error_response(ApiError{404,
                                    "no route for " + request.method + " " + request.path,
                                    "invalid_request_error",
                                    "",
                                    "not_found",
                                    {}}));
    }
    EndpointContext* context = context_.get();
    const bool posted = workers_.post([context, exchange, handler = route->handler] {
        // A bug answers 500; it never takes the server down.
        try {
            handler(*context, exchange);
        } catch (const std::exception& error) {
            log_error("{} {}: {}", exchange->request().method, exchange->request().path, error.what());
            exchange->respond(error_response(internal_error(std::string("internal error: ") + error.what())));
        }
    });
    if (!posted) exchange->respond(error_response(unavailable("the server is shutting down")));
}

void HttpServer::on_completed(const HttpRequest& request, int status) {
    if (request.path.rfind("/v1", 0) != 0) return;
    if (status != 0) metrics_.count_http_response(status);
    if (status >= 400) log_info("{} {} -> {}", request.method, request.path, status);
}

bool HttpServer::shutdown(double timeout_seconds) {
    const ShutdownDeadline shutdown = lifecycle_.begin_shutdown(timeout_seconds);
    engine_.stop_accepting();
    // In-flight requests get the time up to the cut-off, the rest is a reserve for aborting and closing.
    bool drained = engine_.wait_idle(seconds_until(shutdown.cut_off));
    if (!drained) {
        log_warn("shutdown: the deadline is reached; aborting {} unfinished sequences",
                 engine_.num_admitted_sequences());
        engine_.abort_all();
        engine_.wait_idle(seconds_until(shutdown.deadline));
    }
    return lifecycle_.finish(shutdown) && drained;
}

}  // namespace lmrun::server
