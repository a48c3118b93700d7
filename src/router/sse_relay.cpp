#include "router/sse_relay.h"

namespace lmrun::router {

SseRelay::SseRelay(std::function<void()> on_drained, std::function<void()> on_client_gone,
                   size_t max_buffered_bytes)
    : on_drained_(std::move(on_drained)),
      on_client_gone_(std::move(on_client_gone)),
      max_buffered_bytes_(max_buffered_bytes) {}

void SseRelay::wake_locked(std::function<void()>& to_call) {
    to_call = std::move(wake_);
    wake_ = nullptr;
}

bool SseRelay::push(std::string_view bytes) {
    std::function<void()> wake;
    {
        std::lock_guard lock(mutex_);
        if (ended_) return true;  // the client is gone or the stream was failed: drop
        if (ready_.size() >= max_buffered_bytes_) {
            paused_ = true;
            return false;
        }
        partial_.append(bytes);
        const size_t boundary = partial_.rfind("\n\n");
        if (boundary == std::string::npos) return true;
        ready_.append(partial_, 0, boundary + 2);
        partial_.erase(0, boundary + 2);
        wake_locked(wake);
    }
    if (wake) wake();
    return true;
}

void SseRelay::end() {
    std::function<void()> wake;
    {
        std::lock_guard lock(mutex_);
        if (ended_) return;
        ready_ += partial_;  // a well-formed stream leaves nothing here
        partial_.clear();
        ended_ = true;
        wake_locked(wake);
    }
    if (wake) wake();
}

void SseRelay::fail(const std::string& error_event) {
    std::function<void()> wake;
    {
        std::lock_guard lock(mutex_);
        if (ended_) return;
        partial_.clear();
        ready_ += error_event;
        ended_ = true;
        wake_locked(wake);
    }
    if (wake) wake();
}

server::BodyStream::Poll SseRelay::poll(std::string& out, const std::function<void()>& wake) {
    bool drained_after_pause = false;
    Poll poll = Poll::Pending;
    {
        std::lock_guard lock(mutex_);
        if (!ready_.empty()) {
            out += ready_;
            ready_.clear();
            drained_after_pause = paused_;
            paused_ = false;
            poll = ended_ ? Poll::End : Poll::Data;
        } else if (ended_) {
            poll = Poll::End;
        } else {
            wake_ = wake;
        }
    }
    if (drained_after_pause && on_drained_) on_drained_();
    return poll;
}

void SseRelay::finished(bool complete) {
    bool gone = false;
    {
        std::lock_guard lock(mutex_);
        gone = !complete || !ended_;
        ended_ = true;
        ready_.clear();
        partial_.clear();
    }
    if (gone && on_client_gone_) on_client_gone_();
}

}  // namespace lmrun::router
