#include "server/http_server_lifecycle.h"

#include <algorithm>
#include <thread>

namespace lmrun::server {

using Clock = ShutdownDeadline::Clock;

TransportOptions transport_options(const HttpServerOptions& options) {
    TransportOptions transport;
    transport.max_body_bytes = options.max_request_body_bytes;
    transport.max_connections = unsigned(options.max_connections);
    transport.idle_timeout_seconds = unsigned(options.idle_timeout_seconds);
    transport.read_budget_seconds = options.request_timeout_seconds;
    return transport;
}

bool poll_until(const std::function<bool()>& done, Clock::time_point until) {
    while (!done() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
}

HttpServerLifecycle::HttpServerLifecycle(const HttpServerOptions& options, TransportHooks hooks,
                                         WorkerPool& workers)
    : host_(options.host),
      port_(options.port),
      workers_(workers),
      transport_(transport_options(options), std::move(hooks)) {}

HttpServerLifecycle::~HttpServerLifecycle() {
    transport_.stop();
    workers_.stop();
}

Result<int> HttpServerLifecycle::bind() {
    return transport_.listen(host_, port_);
}

Status HttpServerLifecycle::serve() {
    LMRUN_RETURN_IF_ERROR(transport_.start());
    std::unique_lock lock(mutex_);
    stopped_changed_.wait(lock, [&] { return stopped_; });
    return ok_status();
}

ShutdownDeadline HttpServerLifecycle::begin_shutdown(double timeout_seconds) {
    const auto seconds = [](double value) {
        return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
    };
    ShutdownDeadline shutdown;
    shutdown.deadline = Clock::now() + seconds(timeout_seconds);
    shutdown.cut_off = shutdown.deadline - seconds(std::min(1.0, timeout_seconds / 10));
    draining_ = true;
    return shutdown;
}

bool HttpServerLifecycle::finish(const ShutdownDeadline& deadline) {
    // Answers and the ends of streams are written after the owner's work finished them.
    const bool closed = poll_until([&] { return transport_.num_open_exchanges() == 0; }, deadline.deadline);
    transport_.stop();
    workers_.stop();
    {
        std::lock_guard lock(mutex_);
        stopped_ = true;
    }
    stopped_changed_.notify_all();
    return closed;
}

}  // namespace lmrun::server
