// Server metrics in the Prometheus text format (version 0.0.4), with vLLM's
// metric names so existing dashboards work: gauges of running/waiting requests
// and KV cache usage (a fraction in [0, 1], as vLLM reports it), counters of
// prompt/generation tokens, prefix-cache queries/hits (in tokens), finished
// requests by reason, and histograms of time to first token, inter-token
// latency, time per output token and end-to-end latency (seconds); lmrun's own
// counters of API responses by status and of slow connections dropped. Every
// series carries the label model_name="<served name>". Thread-safe: the engine
// thread records, HTTP threads render.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/sequence.h"

namespace lmrun::server {

class Histogram {
  public:
    explicit Histogram(std::vector<double> upper_bounds);
    void observe(double value);
    int64_t count() const { return count_; }
    double sum() const { return sum_; }
    // "_bucket" lines (cumulative, with le="+Inf"), "_sum" and "_count".
    void render(const std::string& name, const std::string& labels, std::string& out) const;

  private:
    std::vector<double> upper_bounds_;
    std::vector<int64_t> bucket_counts_;  // non-cumulative, one per bound
    int64_t count_ = 0;
    double sum_ = 0;
};

// Published by the engine thread after every step.
struct EngineGauges {
    int64_t num_running = 0;           // sequences in the running batch
    int64_t num_waiting = 0;           // sequences queued, in the engine or not yet handed to it
    double kv_cache_usage = 0;         // fraction of KV blocks in use
    int64_t prefix_cache_queries = 0;  // tokens
    int64_t prefix_cache_hits = 0;     // tokens
    int64_t num_preemptions = 0;
    // For routers (GET /load): tokens of the running sequences (their context so far) and of
    // the waiting ones (their prompts), and the KV cache's size in tokens.
    int64_t num_running_tokens = 0;
    int64_t num_waiting_tokens = 0;
    int64_t kv_capacity_tokens = 0;
    // The KV tier below RAM (--kv-offload-dir); reported only when it is on.
    bool kv_offload_enabled = false;
    int64_t kv_offload_loaded_tokens = 0;  // prompt tokens loaded instead of computed
    int64_t kv_offload_hits = 0;           // blocks
    int64_t kv_offload_misses = 0;         // blocks (corrupt ones included)
    int64_t kv_offload_corrupt = 0;        // blocks that failed their checksum (deleted)
    int64_t kv_offload_read_bytes = 0;
    int64_t kv_offload_written_bytes = 0;
    int64_t kv_offload_dropped = 0;    // blocks not written: the writer was behind
    int64_t kv_offload_evictions = 0;  // blocks evicted to keep the bound
};

class ServerMetrics {
  public:
    explicit ServerMetrics(const std::string& model_name);

    void add_prompt_tokens(int64_t count);
    void add_generation_tokens(int64_t count);
    void observe_time_to_first_token(double seconds);
    void observe_inter_token_latency(double seconds);
    void observe_finished(FinishReason reason, double e2e_seconds, double time_per_output_token_seconds);
    void count_http_response(int status);
    void count_dropped_connection();  // a slow client dropped by the read budget
    void set_gauges(const EngineGauges& gauges);
    EngineGauges gauges() const;

    std::string render() const;

  private:
    std::string labels_;  // model_name="..."
    mutable std::mutex mutex_;
    EngineGauges gauges_;
    int64_t prompt_tokens_ = 0;
    int64_t generation_tokens_ = 0;
    std::map<std::string, int64_t> finished_by_reason_;
    std::map<int, int64_t> http_responses_;
    int64_t dropped_connections_ = 0;
    Histogram time_to_first_token_;
    Histogram inter_token_latency_;
    Histogram time_per_output_token_;
    Histogram e2e_latency_;
};

// A Prometheus label value with \, " and newlines escaped.
std::string escape_label_value(const std::string& value);

}  // namespace lmrun::server
