// ProxyCall: one client request the router passes to a worker, from routing to the end of
// the answer. The request goes out as the client sent it (the worker validates it; its
// errors come back unchanged), to the worker the Router picks.
//
// Retries: until the client has been sent anything, a failed attempt is tried again on a
// worker not yet tried (at most max_attempts in all): when the worker cannot be reached,
// breaks, is taken out by the health checks, or answers 429 or 503 (busy, draining). A
// non-streamed answer is sent to the client only once complete, so it is retried whatever
// point the worker failed at; when no worker is left, the last worker's answer (429/503)
// or a 502/503 of the router's goes back. A stream is sent on as soon as the worker
// answers 200 with text/event-stream; from then on a failure ends it with an error event.
//
// The client hanging up cancels the upstream transfer, which the worker sees as its own
// client hanging up (it aborts the request and frees its KV blocks).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "router/router.h"
#include "router/sse_relay.h"
#include "router/upstream_client.h"
#include "server/http_exchange.h"
#include "server/worker_pool.h"

namespace lmrun::router {

class ProxyCall;

// The calls in flight, so that a worker going down or a shutdown can reach them.
class CallRegistry {
  public:
    void add(const std::shared_ptr<ProxyCall>& call);
    void remove(const ProxyCall* call);
    std::vector<std::shared_ptr<ProxyCall>> all() const;
    size_t size() const;

  private:
    mutable std::mutex mutex_;
    std::unordered_set<std::shared_ptr<ProxyCall>> calls_;
};

struct ProxyOptions {
    std::string worker_api_key;  // "" = pass on the client's Authorization header
    int max_attempts = 3;
    double connect_timeout_seconds = 2;
    size_t max_response_bytes = size_t(256) << 20;  // a non-streamed answer, held whole
};

struct ProxyContext {
    Router& router;
    UpstreamClient& client;
    server::WorkerPool& workers;
    CallRegistry& calls;
    ProxyOptions options;
    std::function<void(int32_t worker_id)> on_worker_down;
};

enum class Interruption { None, WorkerDown, Stopping };

class ProxyCall final : public UpstreamHandler, public std::enable_shared_from_this<ProxyCall> {
  public:
    ProxyCall(ProxyContext& context, std::shared_ptr<server::HttpExchange> exchange);

    // Reads the request, registers the call and makes the first attempt. On a worker thread.
    void start();
    // Ends the current attempt: WorkerDown retries it elsewhere (or fails the stream), Stopping
    // answers 503 (or fails the stream).
    void interrupt(Interruption why);
    // The worker of the current attempt (-1 between attempts).
    int32_t worker_id() const;

    void on_response(int status, const HeaderList& headers) override;
    bool on_body(std::string_view bytes) override;
    void on_done(const UpstreamResult& result) override;

  private:
    enum class Mode {
        Whole,      // buffer the answer, send it when complete
        Retryable,  // 429/503 while other workers remain: buffer it, try again at the end
        Stream,     // relay events as they come
    };

    void attempt();
    void retry_later();
    void client_gone();
    UpstreamRequest upstream_request(const std::string& worker_url) const;
    void respond(server::HttpResponse response);
    void respond_buffered();
    void start_stream();
    void end_call();

    ProxyContext& context_;
    const std::shared_ptr<server::HttpExchange> exchange_;
    RoutingInput input_;

    mutable std::mutex mutex_;
    std::optional<Route> route_;  // the current attempt's
    uint64_t transfer_id_ = 0;
    std::vector<int32_t> tried_;
    Mode mode_ = Mode::Whole;
    int status_ = 0;
    HeaderList headers_;
    std::string body_;  // Whole / Retryable
    bool body_too_large_ = false;
    bool have_buffered_answer_ = false;  // a 429/503 kept to pass on if no worker is left
    std::shared_ptr<SseRelay> relay_;
    bool answered_ = false;  // the client got (the start of) its answer
    bool client_gone_ = false;
    bool ended_ = false;
    Interruption interruption_ = Interruption::None;
    std::string last_error_;
};

}  // namespace lmrun::router
