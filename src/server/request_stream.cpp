#include "server/request_stream.h"

#include <chrono>

namespace lmrun::server {

RequestStream::RequestStream(std::vector<std::string> engine_request_ids, int32_t num_completions_per_prompt,
                             bool stream_deltas)
    : engine_request_ids_(std::move(engine_request_ids)),
      n_(num_completions_per_prompt),
      stream_deltas_(stream_deltas) {}

void RequestStream::push_delta(int32_t prompt_index, CompletionDelta delta) {
    if (!stream_deltas_) return;
    delta.index += prompt_index * n_;
    StreamEvent event;
    event.kind = StreamEvent::Kind::Delta;
    event.delta = std::move(delta);
    event.prompt_index = prompt_index;
    push(std::move(event));
}

void RequestStream::push_finished(int32_t prompt_index, RequestOutput output) {
    for (CompletionOutput& completion : output.outputs) completion.index += prompt_index * n_;
    StreamEvent event;
    event.kind = StreamEvent::Kind::Finished;
    event.output = std::move(output);
    event.prompt_index = prompt_index;
    push(std::move(event));
}

void RequestStream::push(StreamEvent event) {
    {
        std::lock_guard lock(mutex_);
        events_.push_back(std::move(event));
    }
    ready_.notify_one();
}

std::optional<StreamEvent> RequestStream::pop(double timeout_seconds) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, std::chrono::duration<double>(timeout_seconds),
                         [&] { return !events_.empty(); })) {
        return std::nullopt;
    }
    StreamEvent event = std::move(events_.front());
    events_.pop_front();
    if (event.kind == StreamEvent::Kind::Finished) ++num_finished_popped_;
    return event;
}

bool RequestStream::all_finished() const {
    std::lock_guard lock(mutex_);
    return num_finished_popped_ == int32_t(engine_request_ids_.size());
}

}  // namespace lmrun::server
