// AsyncEngine: the engine thread of the server. It owns the LLMEngine and runs
// its step loop continuously; HTTP threads only submit() requests and abort()
// them through a mutex-guarded inbox, and read results from each request's
// RequestStream. Nothing an HTTP thread does can block the loop, and no HTTP
// thread touches the LLMEngine. Aborts take effect before the next step (the
// request's KV blocks are freed at once).
//
// Admission is bounded: at most max_num_seqs + max_queued_requests sequences
// (prompts x n) are admitted and unfinished at any time; beyond that submit()
// answers QueueFull and the HTTP layer replies 429.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/llm_engine.h"
#include "server/metrics.h"
#include "server/request_stream.h"

namespace lmrun::server {

struct AsyncEngineOptions {
    int64_t max_num_seqs = 64;          // the engine's running batch
    int64_t max_queued_requests = 256;  // sequences admitted beyond the running batch
};

// One prompt of an API request.
struct EngineRequest {
    std::vector<int32_t> prompt_ids;
    SamplingParams params;  // validated
};

enum class AdmitResult { Accepted, QueueFull, TooLarge, ShuttingDown };

class AsyncEngine {
  public:
    AsyncEngine(std::unique_ptr<LLMEngine> engine, AsyncEngineOptions options, ServerMetrics& metrics);
    ~AsyncEngine();

    void start();
    // requests[p] is prompt p of `stream` (whose engine_request_ids() has one id per prompt).
    AdmitResult submit(std::shared_ptr<RequestStream> stream, std::vector<EngineRequest> requests);
    // The client is gone: its engine requests end before the next step.
    void abort(const std::shared_ptr<RequestStream>& stream);

    // Shutdown, in this order: refuse new requests, let in-flight ones finish
    // (wait_idle), abort what is left (abort_all), end the thread (stop).
    void stop_accepting();
    bool wait_idle(double timeout_seconds);
    void abort_all();
    void stop();

    bool accepting() const;
    // False once the engine turned fatal (a tensor-parallel rank died): its requests ended with
    // an error, new ones are refused, /health answers 503 and `lmrun serve` exits non-zero.
    // Thread-safe.
    bool healthy() const { return engine_->health().ok(); }
    // The engine's grammar compiler (thread-safe; see LLMEngine::grammar_compiler): HTTP threads
    // compile, and so validate, a request's output constraint before submitting it.
    Result<structured::GrammarCompiler*> grammar_compiler() { return engine_->grammar_compiler(); }
    int64_t admission_limit() const { return options_.max_num_seqs + options_.max_queued_requests; }
    int64_t num_admitted_sequences() const;

  private:
    struct Tracker;
    struct Submission {
        std::shared_ptr<RequestStream> stream;
        std::vector<EngineRequest> requests;
        double submit_time = 0;
    };

    void run();
    void add_to_engine(Submission& submission);
    void on_delta(Tracker& tracker, const CompletionDelta& delta);
    void finish(RequestOutput output);
    void abort_request(const std::string& request_id);
    void publish_gauges();
    void release(int64_t num_sequences);

    std::unique_ptr<LLMEngine> engine_;
    const AsyncEngineOptions options_;
    ServerMetrics& metrics_;
    const int64_t block_size_;
    std::thread thread_;

    // Shared with HTTP threads, guarded by mutex_.
    mutable std::mutex mutex_;
    std::condition_variable wake_;  // engine thread: work arrived
    std::condition_variable idle_;  // shutdown: an admitted request finished
    std::vector<Submission> inbox_;
    std::vector<std::string> abort_inbox_;
    int64_t num_inbox_sequences_ = 0;
    int64_t num_inbox_tokens_ = 0;  // prompt tokens of the inbox's sequences
    int64_t num_admitted_sequences_ = 0;
    bool accepting_ = true;
    bool abort_everything_ = false;
    bool stop_ = false;

    // Engine thread only.
    std::unordered_map<std::string, std::unique_ptr<Tracker>> trackers_;
};

}  // namespace lmrun::server
