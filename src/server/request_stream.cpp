#include "server/request_stream.h"

namespace lmrun::server {

RequestStream::RequestStream(std::vector<std::string> engine_request_ids, int32_t num_completions_per_prompt,
                             bool stream_deltas)
    : engine_request_ids_(std::move(engine_request_ids)),
      n_(num_completions_per_prompt),
      stream_deltas_(stream_deltas) {}

void RequestStream::push(StreamEvent event) {
    std::function<void()> wake;
    {
        std::lock_guard lock(mutex_);
        events_.push_back(std::move(event));
        wake.swap(wake_);
    }
    if (wake) wake();
}

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

std::optional<StreamEvent> RequestStream::try_pop(std::function<void()> wake) {
    std::lock_guard lock(mutex_);
    if (events_.empty()) {
        if (wake) wake_ = std::move(wake);
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
