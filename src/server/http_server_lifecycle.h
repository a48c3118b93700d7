// HttpServerLifecycle: the life of an HTTP front over HttpTransport and a WorkerPool, the
// one both HttpServer (`lmrun serve`) and RouterServer (`lmrun router`) lead:
//   bind() -> serve() (blocks until finish() has run) ; from another thread:
//   begin_shutdown(timeout) marks the front draining (its routes answer 503) and gives the
//   deadline; the owner then winds down its own work (the engine's sequences, proxied calls)
//   until the cut-off, aborts what is left; finish(deadline) waits for the transport's open
//   exchanges up to the deadline, stops the transport, then the workers, and releases serve().
// Destruction stops the transport before the workers, as finish() does. The owner declares
// its lifecycle after every member its hooks and its workers' tasks use (and after the
// WorkerPool), so that the lifecycle is destroyed, and the threads stopped, first.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "core/result.h"
#include "server/http_server_options.h"
#include "server/http_transport.h"
#include "server/worker_pool.h"

namespace lmrun::server {

struct ShutdownDeadline {
    using Clock = std::chrono::steady_clock;
    Clock::time_point deadline;  // everything is closed by then
    // Work in flight may run until here; the time left to the deadline is a reserve for
    // aborting the rest and sending what that ends (min(1 s, a tenth of the timeout)).
    Clock::time_point cut_off;
};

// Polls `done` every 10 ms until it holds or `until` has passed; returns `done()` at the end.
bool poll_until(const std::function<bool()>& done, ShutdownDeadline::Clock::time_point until);

class HttpServerLifecycle {
  public:
    HttpServerLifecycle(const HttpServerOptions& options, TransportHooks hooks, WorkerPool& workers);
    ~HttpServerLifecycle();
    HttpServerLifecycle(const HttpServerLifecycle&) = delete;
    HttpServerLifecycle& operator=(const HttpServerLifecycle&) = delete;

    Result<int> bind();  // the bound port
    Status serve();      // starts the transport; returns when finish() has run
    bool draining() const { return draining_; }
    ShutdownDeadline begin_shutdown(double timeout_seconds);
    // True when no exchange was still open at the deadline.
    bool finish(const ShutdownDeadline& deadline);

  private:
    const std::string host_;
    const int port_;
    WorkerPool& workers_;
    HttpTransport transport_;
    std::atomic<bool> draining_{false};

    std::mutex mutex_;
    std::condition_variable stopped_changed_;
    bool stopped_ = false;
};

// The transport's limits as the options give them.
TransportOptions transport_options(const HttpServerOptions& options);

}  // namespace lmrun::server
