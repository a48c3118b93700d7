// RequestStream: the channel between the engine thread and the HTTP side of one
// API request. An API request becomes one or more engine requests (one per
// prompt; each may have n completions); the engine thread pushes their deltas
// (streaming only) and their final outputs, the HTTP side takes them without
// blocking: when there is nothing yet it leaves a wake-up, which the engine thread
// calls once after its next push. Choice indices are already global: prompt p,
// completion i -> p * n + i. Thread-safe; never blocks the producer.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
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

    // The next event; or nullopt, and then `wake` (when given) is kept and called once, on the
    // producer's thread after its next push. A later wake replaces an earlier one.
    std::optional<StreamEvent> try_pop(std::function<void()> wake = {});
    // True once every prompt's Finished event has been popped.
    bool all_finished() const;

  private:
    const std::vector<std::string> engine_request_ids_;
    const int32_t n_;
    const bool stream_deltas_;
    mutable std::mutex mutex_;
    std::deque<StreamEvent> events_;
    std::function<void()> wake_;
    int32_t num_finished_popped_ = 0;

    void push(StreamEvent event);
};

}  // namespace lmrun::server
