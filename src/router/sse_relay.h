// SseRelay: the body of a streamed response the router passes from a worker to its client.
// Events go out as soon as they are whole: bytes are held back only up to the end of the
// event they belong to ("\n\n"), so that if the worker fails mid-event the client gets a
// clean error event instead of half an event. At most `max_buffered_bytes` wait for a slow
// client; past that push() refuses and the upstream transfer pauses until the client
// drained the buffer (then `on_drained` asks to resume it).
//
// Ends: end() after the worker's last byte; fail() with an error event (the worker failed
// or the router is stopping) — the stream then ends without "data: [DONE]", which clients
// read as an abnormal end. If the client goes away first, `on_client_gone` runs.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "server/http_exchange.h"

namespace lmrun::router {

class SseRelay final : public server::BodyStream {
  public:
    SseRelay(std::function<void()> on_drained, std::function<void()> on_client_gone,
             size_t max_buffered_bytes = size_t(1) << 20);

    // Upstream side (any one thread at a time). False: full, nothing taken; pause.
    bool push(std::string_view bytes);
    void end();
    void fail(const std::string& error_event);

    // Client side (the transport).
    Poll poll(std::string& out, const std::function<void()>& wake) override;
    void finished(bool complete) override;

  private:
    void wake_locked(std::function<void()>& to_call);

    const std::function<void()> on_drained_;
    const std::function<void()> on_client_gone_;
    const size_t max_buffered_bytes_;

    std::mutex mutex_;
    std::string ready_;    // whole events not yet taken by the transport
    std::string partial_;  // the start of the next event
    bool ended_ = false;
    bool paused_ = false;  // push() refused since the last drain
    std::function<void()> wake_;
};

}  // namespace lmrun::router
