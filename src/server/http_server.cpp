#include "server/http_server.h"

#include <chrono>
#include <thread>

#include <httplib.h>

#include "core/logging.h"
#include "server/endpoint_context.h"

namespace lmrun::server {
namespace {

// Handlers never let an exception escape into httplib: a bug answers 500, it does not kill the server.
template <typename Handler>
httplib::Server::Handler guarded(EndpointContext* context, Handler handler) {
    return [context, handler](const httplib::Request& req, httplib::Response& res) {
        try {
            handler(*context, req, res);
        } catch (const std::exception& error) {
            log_error("{} {}: {}", req.method, req.path, error.what());
            send_error(res, internal_error(std::string("internal error: ") + error.what()));
        }
    };
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, const PromptProcessor& prompts, AsyncEngine& engine,
                       ServerMetrics& metrics)
    : options_(std::move(options)),
      prompts_(prompts),
      engine_(engine),
      metrics_(metrics),
      context_(std::make_unique<EndpointContext>(EndpointContext{prompts_, engine_, metrics_})),
      server_(std::make_unique<httplib::Server>()) {
    install_routes();
}

HttpServer::~HttpServer() = default;

bool HttpServer::authorized(const std::string& path, const std::string& authorization) const {
    if (options_.api_key.empty() || path.rfind("/v1", 0) != 0) return true;
    return authorization == "Bearer " + options_.api_key;
}

void HttpServer::install_routes() {
    EndpointContext* context = context_.get();
    httplib::Server& server = *server_;
    const int num_threads = options_.http_threads;
    server.new_task_queue = [num_threads] { return new httplib::ThreadPool(size_t(num_threads)); };
    server.set_payload_max_length(size_t(64) << 20);
    server.set_keep_alive_timeout(2);
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        ++num_active_requests_;
        if (authorized(req.path, req.get_header_value("Authorization")))
            return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, unauthorized());
        return httplib::Server::HandlerResponse::Handled;
    });
    server.Post("/v1/completions", guarded(context, handle_completions));
    server.Post("/v1/chat/completions", guarded(context, handle_chat_completions));
    server.Get("/v1/models", guarded(context, handle_models));
    server.Post("/tokenize", guarded(context, handle_tokenize));
    server.Post("/detokenize", guarded(context, handle_detokenize));
    server.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        res.status = draining_ || !engine_.healthy() ? 503 : 200;
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_.render(), "text/plain; version=0.0.4; charset=utf-8");
    });
    server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        send_error(res, ApiError{res.status, "no route for " + req.method + " " + req.path,
                                 "invalid_request_error", "", res.status == 404 ? "not_found" : ""});
    });
    server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
        --num_active_requests_;
        if (req.path.rfind("/v1", 0) != 0) return;
        metrics_.count_http_response(res.status);
        if (res.status >= 400) log_info("{} {} -> {}", req.method, req.path, res.status);
    });
}

Result<int> HttpServer::bind() {
    int port = options_.port;
    if (port == 0) {
        port = server_->bind_to_any_port(options_.host);
        if (port < 0) return make_error("cannot bind {}: no free port", options_.host);
    } else if (!server_->bind_to_port(options_.host, port)) {
        return make_error("cannot bind {}:{} (in use?)", options_.host, port);
    }
    return port;
}

void HttpServer::serve() {
    server_->listen_after_bind();
}

void HttpServer::shutdown(double grace_seconds) {
    draining_ = true;
    engine_.stop_accepting();
    if (!engine_.wait_idle(grace_seconds)) {
        log_warn("shutdown: aborting {} unfinished sequences", engine_.num_admitted_sequences());
        engine_.abort_all();
        engine_.wait_idle(5.0);
    }
    // Streams write their last chunks after the engine finished them: let the workers get there.
    for (int i = 0; i < 100 && num_active_requests_ > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    server_->stop();
}

}  // namespace lmrun::server
