// UpstreamClient: the router's HTTP client towards its workers, on libcurl's multi interface.
// One thread drives every transfer (however many streams are open: no thread per request),
// keeps connections to each worker alive between requests, and applies per-transfer
// connect and total timeouts. Bodies are handed over as they arrive, so Server-Sent Events
// pass through without waiting for the end; a handler that cannot take more pauses its
// transfer (the bytes are delivered again on resume), which bounds what the router buffers
// for a slow client. Any thread may submit, cancel or resume; callbacks run on the loop
// thread and must not block.
//
// Why libcurl and not cpp-httplib's client (already a dependency): httplib blocks a thread
// per request for its whole duration (256 streams = 256 threads) and can only be cancelled
// by shutting its socket from outside; curl's multi loop multiplexes every transfer on one
// thread, pauses a transfer for back-pressure, and cancels one by removing it.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/result.h"

namespace lmrun::router {

using HeaderList = std::vector<std::pair<std::string, std::string>>;  // names in lower case

struct UpstreamRequest {
    std::string url;  // absolute: http://host:port/path
    std::string method = "GET";
    HeaderList headers;
    std::string body;
    double connect_timeout_seconds = 5;
    double timeout_seconds = 0;  // the whole transfer; 0 = no limit (streams last as long as they last)
};

enum class UpstreamFailure {
    None,       // the whole response arrived
    Connect,    // no connection (refused, unreachable, connect timeout)
    Timeout,    // timeout_seconds passed
    Transfer,   // the connection broke or the response was malformed
    Cancelled,  // cancel() or stop()
};

struct UpstreamResult {
    UpstreamFailure failure = UpstreamFailure::None;
    std::string error;  // what went wrong, for logs and error events
    int status = 0;     // the response's status when one began, else 0
};

class UpstreamHandler {
  public:
    virtual ~UpstreamHandler() = default;
    // The status and headers of the (final) response, before any of its body.
    virtual void on_response(int status, const HeaderList& headers) = 0;
    // Bytes of the body. False: the transfer pauses, and these same bytes come again after resume().
    virtual bool on_body(std::string_view bytes) = 0;
    // Exactly once per submitted transfer, last.
    virtual void on_done(const UpstreamResult& result) = 0;
};

class UpstreamClient {
  public:
    UpstreamClient();
    ~UpstreamClient();
    UpstreamClient(const UpstreamClient&) = delete;
    UpstreamClient& operator=(const UpstreamClient&) = delete;

    Status start();
    // Ends every transfer (on_done: Cancelled) and the loop thread. Later submits are cancelled at once.
    void stop();

    // Returns the transfer's id (never 0).
    uint64_t submit(UpstreamRequest request, std::shared_ptr<UpstreamHandler> handler);
    // on_done(Cancelled) follows unless the transfer already ended.
    void cancel(uint64_t id, std::string reason);
    void resume(uint64_t id);

    // Transfers submitted and not yet ended.
    int64_t num_active() const { return num_active_; }

    struct Transfer;  // one request in flight (internal; public for libcurl's C callbacks)

  private:
    struct Command {
        enum class Kind { Submit, Cancel, Resume } kind;
        uint64_t id = 0;
        std::unique_ptr<Transfer> transfer;  // Submit
        std::string reason;                  // Cancel
    };

    void post(Command command);
    void run();
    void run_commands();
    void add(std::unique_ptr<Transfer> transfer);
    void finish(uint64_t id, UpstreamResult result);
    void read_done_transfers();

    void* multi_ = nullptr;  // CURLM*
    std::thread thread_;
    std::atomic<uint64_t> next_id_{1};
    std::atomic<int64_t> num_active_{0};

    std::mutex mutex_;
    std::deque<Command> commands_;
    bool stopping_ = false;

    // Loop thread only.
    std::unordered_map<uint64_t, std::unique_ptr<Transfer>> transfers_;
};

// A whole small response (health checks, /load, /metrics), handed to `done` on the loop thread.
// Bodies past max_body_bytes end the transfer as a Transfer failure.
struct BufferedResponse {
    UpstreamResult result;
    std::string body;
};
std::shared_ptr<UpstreamHandler> buffered_handler(std::function<void(BufferedResponse)> done,
                                                  size_t max_body_bytes = size_t(16) << 20);

}  // namespace lmrun::router
