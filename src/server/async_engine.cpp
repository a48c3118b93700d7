#include "server/async_engine.h"

#include <chrono>

#include "core/logging.h"
#include "core/parallel.h"
#include "core/timer.h"

namespace lmrun::server {

// What the engine thread remembers of one engine request: where its results go
// and the times its metrics and log line need.
struct AsyncEngine::Tracker {
    std::shared_ptr<RequestStream> stream;
    int32_t prompt_index = 0;
    int32_t n = 1;
    double submit_time = 0;
    double first_token_time = 0;
    std::vector<double> last_token_time;  // per completion
    int64_t num_prompt_tokens = 0;
    int64_t num_generation_tokens = 0;
};

AsyncEngine::AsyncEngine(std::unique_ptr<LLMEngine> engine, AsyncEngineOptions options,
                         ServerMetrics& metrics)
    : engine_(std::move(engine)),
      options_(options),
      metrics_(metrics),
      block_size_(engine_->block_manager().block_size()) {}

AsyncEngine::~AsyncEngine() {
    stop();
}

void AsyncEngine::start() {
    // Before the thread exists, so that /load and /metrics show the KV capacity as soon as the
    // server answers (published from the engine thread, a fast first probe could see zero).
    publish_gauges();
    thread_ = std::thread([this] { run(); });
}

AdmitResult AsyncEngine::submit(std::shared_ptr<RequestStream> stream, std::vector<EngineRequest> requests) {
    int64_t num_sequences = 0;
    int64_t num_tokens = 0;
    for (const EngineRequest& request : requests) {
        num_sequences += request.params.n;
        num_tokens += request.params.n * int64_t(request.prompt_ids.size());
    }
    {
        std::lock_guard lock(mutex_);
        if (!accepting_ || !healthy()) return AdmitResult::ShuttingDown;
        if (num_sequences > admission_limit()) return AdmitResult::TooLarge;
        if (num_admitted_sequences_ + num_sequences > admission_limit()) return AdmitResult::QueueFull;
        num_admitted_sequences_ += num_sequences;
        num_inbox_sequences_ += num_sequences;
        num_inbox_tokens_ += num_tokens;
        inbox_.push_back(Submission{std::move(stream), std::move(requests), now_seconds()});
    }
    wake_.notify_one();
    return AdmitResult::Accepted;
}

void AsyncEngine::abort(const std::shared_ptr<RequestStream>& stream) {
    {
        std::lock_guard lock(mutex_);
        for (const std::string& id : stream->engine_request_ids()) abort_inbox_.push_back(id);
    }
    wake_.notify_one();
}

void AsyncEngine::stop_accepting() {
    std::lock_guard lock(mutex_);
    accepting_ = false;
}

bool AsyncEngine::wait_idle(double timeout_seconds) {
    std::unique_lock lock(mutex_);
    return idle_.wait_for(lock, std::chrono::duration<double>(timeout_seconds),
                          [&] { return num_admitted_sequences_ == 0; });
}

void AsyncEngine::abort_all() {
    {
        std::lock_guard lock(mutex_);
        abort_everything_ = true;
    }
    wake_.notify_one();
}

void AsyncEngine::stop() {
    {
        std::lock_guard lock(mutex_);
        accepting_ = false;
        abort_everything_ = true;
        stop_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
}

bool AsyncEngine::accepting() const {
    std::lock_guard lock(mutex_);
    return accepting_;
}

int64_t AsyncEngine::num_admitted_sequences() const {
    std::lock_guard lock(mutex_);
    return num_admitted_sequences_;
}

void AsyncEngine::release(int64_t num_sequences) {
    {
        std::lock_guard lock(mutex_);
        num_admitted_sequences_ -= num_sequences;
    }
    idle_.notify_all();
}

void AsyncEngine::run() {
    // OpenMP's thread count is per calling thread: the engine's --threads was set on the thread
    // that created it, and this thread would otherwise run its parallel loops with the default.
    configure_threads(engine_->config().num_threads);
    for (;;) {
        std::vector<Submission> submissions;
        std::vector<std::string> aborts;
        bool abort_everything = false;
        bool stopping = false;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] {
                return stop_ || abort_everything_ || !inbox_.empty() || !abort_inbox_.empty() ||
                       engine_->has_unfinished_requests();
            });
            submissions.swap(inbox_);
            aborts.swap(abort_inbox_);
            abort_everything = abort_everything_;
            abort_everything_ = false;
            stopping = stop_;
            num_inbox_sequences_ = 0;
            num_inbox_tokens_ = 0;
        }
        // Submissions first: an abort always follows its own submission.
        for (Submission& submission : submissions) add_to_engine(submission);
        for (const std::string& id : aborts) abort_request(id);
        if (abort_everything) {
            std::vector<std::string> ids;
            ids.reserve(trackers_.size());
            for (const auto& [id, tracker] : trackers_) ids.push_back(id);
            for (const std::string& id : ids) abort_request(id);
        }
        if (engine_->has_unfinished_requests()) {
            for (RequestOutput& output : engine_->step()) finish(std::move(output));
        }
        publish_gauges();
        if (stopping && !engine_->has_unfinished_requests()) break;
    }
}

void AsyncEngine::add_to_engine(Submission& submission) {
    const std::vector<std::string>& ids = submission.stream->engine_request_ids();
    for (size_t p = 0; p < submission.requests.size(); ++p) {
        EngineRequest& request = submission.requests[p];
        auto tracker = std::make_unique<Tracker>();
        tracker->stream = submission.stream;
        tracker->prompt_index = int32_t(p);
        tracker->n = request.params.n;
        tracker->submit_time = submission.submit_time;
        tracker->last_token_time.assign(size_t(request.params.n), 0.0);
        tracker->num_prompt_tokens = int64_t(request.prompt_ids.size());
        Tracker* raw = tracker.get();
        trackers_[ids[p]] = std::move(tracker);
        metrics_.add_prompt_tokens(raw->num_prompt_tokens);
        Status added =
            engine_->add_request(ids[p], std::move(request.prompt_ids), request.params,
                                 [this, raw](const CompletionDelta& delta) { on_delta(*raw, delta); });
        if (added.ok()) continue;
        // The HTTP layer validated everything the engine checks, so this is a bug, not bad input.
        RequestOutput output;
        output.request_id = ids[p];
        output.finished = true;
        for (int32_t i = 0; i < request.params.n; ++i) {
            CompletionOutput completion;
            completion.index = i;
            completion.finish_reason = FinishReason::Error;
            completion.error_message = added.error().message;
            output.outputs.push_back(std::move(completion));
        }
        finish(std::move(output));
    }
}

void AsyncEngine::on_delta(Tracker& tracker, const CompletionDelta& delta) {
    const double now = now_seconds();
    if (!delta.token_ids.empty()) {
        const int64_t num_tokens = int64_t(delta.token_ids.size());
        tracker.num_generation_tokens += num_tokens;
        metrics_.add_generation_tokens(num_tokens);
        if (tracker.first_token_time == 0) {
            tracker.first_token_time = now;
            metrics_.observe_time_to_first_token(now - tracker.submit_time);
        }
        double& last = tracker.last_token_time[size_t(delta.index)];
        if (last > 0) metrics_.observe_inter_token_latency(now - last);
        last = now;
    }
    tracker.stream->push_delta(tracker.prompt_index, delta);
}

void AsyncEngine::finish(RequestOutput output) {
    auto found = trackers_.find(output.request_id);
    if (found == trackers_.end()) return;
    std::unique_ptr<Tracker> tracker = std::move(found->second);
    trackers_.erase(found);
    const double now = now_seconds();
    const double e2e = now - tracker->submit_time;
    const double ttft = tracker->first_token_time > 0 ? tracker->first_token_time - tracker->submit_time : 0;
    std::string status;
    for (const CompletionOutput& completion : output.outputs) {
        const int64_t num_tokens = int64_t(completion.token_ids.size());
        const double tpot = num_tokens > 1 ? (now - tracker->first_token_time) / double(num_tokens - 1) : 0;
        metrics_.observe_finished(completion.finish_reason, e2e, tpot);
        if (!status.empty()) status += ",";
        status += to_string(completion.finish_reason);
        if (!completion.error_message.empty()) status += "(" + completion.error_message + ")";
    }
    log_info("request {}: prompt {} tok, output {} tok, ttft {:.3f} s, total {:.3f} s, {}", output.request_id,
             tracker->num_prompt_tokens, tracker->num_generation_tokens, ttft, e2e, status);
    output.metrics.num_prompt_tokens = tracker->num_prompt_tokens;
    tracker->stream->push_finished(tracker->prompt_index, std::move(output));
    release(tracker->n);
}

void AsyncEngine::abort_request(const std::string& request_id) {
    auto found = trackers_.find(request_id);
    if (found == trackers_.end()) return;  // finished meanwhile
    engine_->abort_request(request_id);
    // The engine reports no output for an aborted request; make the final one here.
    RequestOutput output;
    output.request_id = request_id;
    output.finished = true;
    for (int32_t i = 0; i < found->second->n; ++i) {
        CompletionOutput completion;
        completion.index = i;
        completion.finish_reason = FinishReason::Abort;
        output.outputs.push_back(std::move(completion));
    }
    finish(std::move(output));
}

void AsyncEngine::publish_gauges() {
    int64_t num_inbox_sequences = 0;
    int64_t num_inbox_tokens = 0;
    {
        std::lock_guard lock(mutex_);
        num_inbox_sequences = num_inbox_sequences_;
        num_inbox_tokens = num_inbox_tokens_;
    }
    EngineGauges gauges;
    const Scheduler& scheduler = engine_->scheduler();
    const BlockManager& block_manager = engine_->block_manager();
    gauges.num_running = int64_t(scheduler.num_running());
    gauges.num_waiting = int64_t(scheduler.num_waiting()) + num_inbox_sequences;
    gauges.kv_cache_usage = block_manager.usage();
    gauges.prefix_cache_queries = block_manager.prefix_cache_queries() * block_size_;
    gauges.prefix_cache_hits = block_manager.prefix_cache_hits() * block_size_;
    gauges.num_preemptions = scheduler.num_preemptions();
    for (const auto& seq : scheduler.running()) gauges.num_running_tokens += seq->num_tokens();
    gauges.num_waiting_tokens = num_inbox_tokens;
    for (const auto& seq : scheduler.waiting()) gauges.num_waiting_tokens += seq->num_tokens();
    gauges.kv_capacity_tokens = block_manager.num_blocks() * block_manager.block_size();
    if (const std::optional<KvOffloadStats> tier = engine_->kv_offload_stats()) {
        gauges.kv_offload_enabled = true;
        gauges.kv_offload_loaded_tokens = scheduler.num_loaded_tokens();
        gauges.kv_offload_hits = tier->store.hits;
        gauges.kv_offload_misses = tier->store.misses;
        gauges.kv_offload_corrupt = tier->store.corrupt;
        gauges.kv_offload_read_bytes = tier->store.bytes_read;
        gauges.kv_offload_written_bytes = tier->store.bytes_written;
        gauges.kv_offload_dropped = tier->blocks_dropped;
        gauges.kv_offload_evictions = tier->store.evictions;
    }
    metrics_.set_gauges(gauges);
}

}  // namespace lmrun::server
