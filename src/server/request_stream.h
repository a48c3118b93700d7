// RequestStream: the channel between the engine thread and the HTTP thread of
// one API request. An API request becomes one or more engine requests (one per
// prompt; each may have n completions); the engine thread pushes their deltas
// (streaming only) and their final outputs, the HTTP thread pops them. Choice
// indices are already global: prompt p, completion i -> p * n + i.
// Thread-safe (mutex + condition variable); never blocks the producer.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/request_output.h"

namespace lmrun::server {

struct StreamEvent {
    enum class Kind { Delta, Finished };
    Kind kind = Kind::Delta;
    CompletionDelta delta;  // Delta: index is the global choice index
    RequestOutput output;   // Finished: completions' indices are global choice indices
    int32_t prompt_index = 0;
};

class RequestStream {
  public:
    // engine_request_ids[p] serves prompt p.
    RequestStream(std::vector<std::string> engine_request_ids, int32_t num_completions_per_prompt,
                  bool stream_deltas);

    const std::vector<std::string>& engine_request_ids() const { return engine_request_ids_; }
    int32_t num_completions_per_prompt() const { return n_; }
    bool stream_deltas() const { return stream_deltas_; }

    // Engine thread.
    void push_delta(int32_t prompt_index, CompletionDelta delta);
    void push_finished(int32_t prompt_index, RequestOutput output);

    // HTTP thread: the next event, or nullopt after timeout_seconds without one.
    std::optional<StreamEvent> pop(double timeout_seconds);
    // True once every prompt's Finished event has been popped.
    bool all_finished() const;
    // Non-streaming: waits for every final output (ordered by prompt) or the deadline.
    // Returns false on timeout; `keep_waiting` is polled every `poll_seconds`.
    template <typename KeepWaiting>
    bool wait_all(std::vector<RequestOutput>& outputs, double poll_seconds, KeepWaiting keep_waiting);

  private:
    void push(StreamEvent event);

    const std::vector<std::string> engine_request_ids_;
    const int32_t n_;
    const bool stream_deltas_;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<StreamEvent> events_;
    int32_t num_finished_popped_ = 0;
};

template <typename KeepWaiting>
bool RequestStream::wait_all(std::vector<RequestOutput>& outputs, double poll_seconds,
                             KeepWaiting keep_waiting) {
    outputs.assign(engine_request_ids_.size(), RequestOutput{});
    while (!all_finished()) {
        std::optional<StreamEvent> event = pop(poll_seconds);
        if (!event) {
            if (!keep_waiting()) return false;
            continue;
        }
        if (event->kind == StreamEvent::Kind::Finished)
            outputs[size_t(event->prompt_index)] = std::move(event->output);
    }
    return true;
}

}  // namespace lmrun::server
