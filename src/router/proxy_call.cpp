#include "router/proxy_call.h"

#include <algorithm>

#include "core/logging.h"
#include "server/api_error.h"

namespace lmrun::router {
namespace {

// Request headers that concern one connection, or that libcurl writes itself.
bool is_hop_by_hop(const std::string& name) {
    static const char* const kNames[] = {"host",
                                         "content-length",
                                         "transfer-encoding",
                                         "connection",
                                         "keep-alive",
                                         "expect",
                                         "te",
                                         "upgrade",
                                         "trailer",
                                         "proxy-connection",
                                         "proxy-authorization",
                                         "accept-encoding"};
    return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; });
}

// Response headers the client gets from the worker (the transport writes the framing ones).
bool is_passed_back(const std::string& name) {
    return name == "content-type" || name == "retry-after" || name == "cache-control" ||
           name == "x-accel-buffering";
}

std::string header_value(const HeaderList& headers, const std::string& name) {
    for (const auto& [key, value] : headers)
        if (key == name) return value;
    return {};
}

server::ApiError worker_failed(const std::string& message) {
    return server::ApiError{502, message, "server_error", "", "worker_failed", {}};
}

server::ApiError shutting_down() {
    return server::unavailable("the router is shutting down");
}

std::string error_event(const server::ApiError& error) {
    return "data: " + error.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

}  // namespace

void CallRegistry::add(const std::shared_ptr<ProxyCall>& call) {
    std::lock_guard lock(mutex_);
    calls_.insert(call);
}

void CallRegistry::remove(const ProxyCall* call) {
    std::shared_ptr<ProxyCall> last;  // destroyed after the lock is released
    std::lock_guard lock(mutex_);
    for (auto it = calls_.begin(); it != calls_.end(); ++it) {
        if (it->get() != call) continue;
        last = *it;
        calls_.erase(it);
        break;
    }
}

std::vector<std::shared_ptr<ProxyCall>> CallRegistry::all() const {
    std::lock_guard lock(mutex_);
    return {calls_.begin(), calls_.end()};
}

size_t CallRegistry::size() const {
    std::lock_guard lock(mutex_);
    return calls_.size();
}

ProxyCall::ProxyCall(ProxyContext& context, std::shared_ptr<server::HttpExchange> exchange)
    : context_(context), exchange_(std::move(exchange)) {}

void ProxyCall::start() {
    input_ = read_routing_input(exchange_->request());
    context_.calls.add(shared_from_this());
    std::weak_ptr<ProxyCall> weak = weak_from_this();
    exchange_->on_client_gone([weak] {
        if (auto self = weak.lock()) self->client_gone();
    });
    attempt();
}

int32_t ProxyCall::worker_id() const {
    std::lock_guard lock(mutex_);
    return route_ ? route_->worker_id : -1;
}

UpstreamRequest ProxyCall::upstream_request(const std::string& worker_url) const {
    const server::HttpRequest& request = exchange_->request();
    UpstreamRequest upstream;
    upstream.url = worker_url + request.path;
    upstream.method = request.method;
    upstream.body = request.body;
    upstream.connect_timeout_seconds = context_.options.connect_timeout_seconds;
    for (const auto& [name, value] : request.headers) {
        if (is_hop_by_hop(name)) continue;
        if (name == "authorization" && !context_.options.worker_api_key.empty()) continue;
        upstream.headers.emplace_back(name, value);
    }
    if (!context_.options.worker_api_key.empty())
        upstream.headers.emplace_back("authorization", "Bearer " + context_.options.worker_api_key);
    return upstream;
}

void ProxyCall::attempt() {
    std::unique_lock lock(mutex_);
    if (ended_) return;
    if (client_gone_) {
        lock.unlock();
        return end_call();
    }
    if (interruption_ == Interruption::Stopping) {
        lock.unlock();
        return respond(server::error_response(shutting_down()));
    }
    std::optional<Route> route;
    if (int(tried_.size()) < context_.options.max_attempts) route = context_.router.route(input_, tried_);
    if (!route) {
        if (have_buffered_answer_) {
            lock.unlock();
            return respond_buffered();
        }
        const server::ApiError error = tried_.empty()
                                           ? server::ApiError{503, "no worker is available", "server_error",
                                                              "",  "no_worker_available",    {}}
                                           : worker_failed("the worker failed: " + last_error_);
        lock.unlock();
        return respond(server::error_response(error));
    }
    if (!tried_.empty()) context_.router.count_retry();
    tried_.push_back(route->worker_id);
    route_ = route;
    mode_ = Mode::Whole;
    status_ = 0;
    headers_.clear();
    body_.clear();
    body_too_large_ = false;
    interruption_ = Interruption::None;
    UpstreamRequest request = upstream_request(route->url);
    lock.unlock();
    // Not under the lock: a client that is stopping answers on_done() at once, on this thread.
    const uint64_t id = context_.client.submit(std::move(request), shared_from_this());
    lock.lock();
    if (!route_ || route_->worker_id != route->worker_id) return;  // already ended
    transfer_id_ = id;
    const bool cancel_now = client_gone_ || interruption_ != Interruption::None;
    lock.unlock();
    if (cancel_now) context_.client.cancel(id, "interrupted");
}

void ProxyCall::on_response(int status, const HeaderList& headers) {
    std::unique_lock lock(mutex_);
    status_ = status;
    headers_ = headers;
    const bool busy = status == 429 || status == 503;
    if (busy && int(tried_.size()) < context_.options.max_attempts && context_.router.has_candidate(tried_)) {
        mode_ = Mode::Retryable;
    } else if (status == 200 && header_value(headers, "content-type").rfind("text/event-stream", 0) == 0) {
        mode_ = Mode::Stream;
        lock.unlock();
        start_stream();
    } else {
        mode_ = Mode::Whole;
    }
}

void ProxyCall::start_stream() {
    std::weak_ptr<ProxyCall> weak = weak_from_this();
    auto relay = std::make_shared<SseRelay>(
        [weak] {
            auto self = weak.lock();
            if (!self) return;
            uint64_t id = 0;
            {
                std::lock_guard lock(self->mutex_);
                id = self->transfer_id_;
            }
            if (id != 0) self->context_.client.resume(id);
        },
        [weak] {
            if (auto self = weak.lock()) self->client_gone();
        });
    server::HttpResponse response;
    std::string worker_url;
    {
        std::lock_guard lock(mutex_);
        relay_ = relay;
        answered_ = true;
        response.status = status_;
        for (const auto& [name, value] : headers_)
            if (is_passed_back(name)) response.set_header(name, value);
        if (route_) worker_url = route_->url;
    }
    response.set_header("X-Lmrun-Worker", worker_url);
    response.stream = relay;
    exchange_->respond(std::move(response));
}

bool ProxyCall::on_body(std::string_view bytes) {
    std::unique_lock lock(mutex_);
    if (mode_ == Mode::Stream) {
        std::shared_ptr<SseRelay> relay = relay_;
        lock.unlock();
        return relay->push(bytes);
    }
    if (body_.size() + bytes.size() > context_.options.max_response_bytes) {
        body_too_large_ = true;
        return true;
    }
    body_.append(bytes);
    return true;
}

void ProxyCall::on_done(const UpstreamResult& result) {
    Route route;
    {
        std::lock_guard lock(mutex_);
        route = route_.value_or(Route{});
        route_.reset();
        transfer_id_ = 0;
    }
    context_.router.finish(route);
    const bool broken = result.failure == UpstreamFailure::Connect ||
                        result.failure == UpstreamFailure::Transfer ||
                        result.failure == UpstreamFailure::Timeout;
    if (broken &&
        context_.router.report_failure(route.worker_id, WorkerFailure::Unreachable) == HealthChange::Down &&
        context_.on_worker_down)
        context_.on_worker_down(route.worker_id);

    std::unique_lock lock(mutex_);
    if (client_gone_) {
        lock.unlock();
        return end_call();
    }
    if (result.failure == UpstreamFailure::None) {
        switch (mode_) {
            case Mode::Stream: {
                std::shared_ptr<SseRelay> relay = relay_;
                lock.unlock();
                relay->end();
                return end_call();
            }
            case Mode::Retryable:
                have_buffered_answer_ = true;
                last_error_ = "it answered " + std::to_string(status_);
                lock.unlock();
                return retry_later();
            case Mode::Whole: {
                const bool too_large = body_too_large_;
                lock.unlock();
                if (too_large)
                    return respond(server::error_response(worker_failed("the worker's answer is too large")));
                return respond_buffered();
            }
        }
    }
    const bool stopping = interruption_ == Interruption::Stopping;
    last_error_ = stopping                                    ? "the router is shutting down"
                  : interruption_ == Interruption::WorkerDown ? "the worker was taken out"
                  : result.error.empty()                      ? "the transfer failed"
                                                              : result.error;
    last_error_ = route.url + ": " + last_error_;
    if (mode_ == Mode::Stream) {
        std::shared_ptr<SseRelay> relay = relay_;
        const server::ApiError error =
            stopping ? shutting_down() : worker_failed("the worker failed: " + last_error_);
        lock.unlock();
        log_warn("router: a stream from {} ended with an error: {}", route.url, last_error_);
        context_.router.count_stream_error();
        relay->fail(error_event(error));
        return end_call();
    }
    lock.unlock();
    if (stopping) return respond(server::error_response(shutting_down()));
    retry_later();
}

void ProxyCall::retry_later() {
    auto self = shared_from_this();
    if (!context_.workers.post([self] { self->attempt(); })) respond(server::error_response(shutting_down()));
}

void ProxyCall::respond_buffered() {
    server::HttpResponse response;
    {
        std::lock_guard lock(mutex_);
        response.status = status_;
        for (const auto& [name, value] : headers_) {
            if (name == "content-type")
                response.content_type = value;
            else if (is_passed_back(name))
                response.set_header(name, value);
        }
        response.body = std::move(body_);
        if (!tried_.empty()) response.set_header("X-Lmrun-Worker", context_.router.worker_url(tried_.back()));
    }
    respond(std::move(response));
}

void ProxyCall::respond(server::HttpResponse response) {
    {
        std::lock_guard lock(mutex_);
        if (answered_) return;
        answered_ = true;
    }
    exchange_->respond(std::move(response));
    end_call();
}

void ProxyCall::interrupt(Interruption why) {
    uint64_t id = 0;
    {
        std::lock_guard lock(mutex_);
        if (ended_) return;
        if (interruption_ != Interruption::Stopping) interruption_ = why;
        id = transfer_id_;
    }
    if (id != 0)
        context_.client.cancel(id, why == Interruption::Stopping ? "router stopping" : "worker taken out");
}

void ProxyCall::client_gone() {
    uint64_t id = 0;
    {
        std::lock_guard lock(mutex_);
        if (ended_) return;
        client_gone_ = true;
        id = transfer_id_;
    }
    if (id != 0) context_.client.cancel(id, "the client went away");
}

void ProxyCall::end_call() {
    {
        std::lock_guard lock(mutex_);
        if (ended_) return;
        ended_ = true;
    }
    context_.calls.remove(this);
}

}  // namespace lmrun::router
