#include "server/metrics.h"

#include <fmt/format.h>

#include "engine/request_output.h"

namespace lmrun::server {
namespace {

// vLLM's buckets, with finer low ends: a CPU step of a small model takes about a millisecond.
const std::vector<double> kTimeToFirstTokenBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                                      0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                                      20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTokenLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                                  0.15,  0.2,    0.3,   0.4,  0.5,   0.75, 1.0,   2.5,
                                                  5.0,   7.5,    10.0,  20.0, 40.0,  80.0};
const std::vector<double> kE2eLatencyBuckets = {0.01, 0.05, 0.1,   0.3,   0.5,   0.8,   1.0,    1.5,
                                                2.0,  2.5,  5.0,   10.0,  15.0,  20.0,  30.0,   40.0,
                                                50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

void header(std::string& out, const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string escape_label_value(const std::string& value) {
    std::string escaped;
    for (char c : value) {
        if (c == '\\')
            escaped += "\\\\";
        else if (c == '"')
            escaped += "\\\"";
        else if (c == '\n')
            escaped += "\\n";
        else
            escaped += c;
    }
    return escaped;
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), bucket_counts_(upper_bounds_.size(), 0) {}

void Histogram::observe(double value) {
    for (size_t i = 0; i < upper_bounds_.size(); ++i) {
        if (value <= upper_bounds_[i]) {
            ++bucket_counts_[i];
            break;
        }
    }
    ++count_;
    sum_ += value;
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
    int64_t cumulative = 0;
    for (size_t i = 0; i < upper_bounds_.size(); ++i) {
        cumulative += bucket_counts_[i];
        out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, upper_bounds_[i], cumulative);
    }
    out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, count_);
    out += fmt::format("{}_sum{{{}}} {}\n", name, labels, sum_);
    out += fmt::format("{}_count{{{}}} {}\n", name, labels, count_);
}

ServerMetrics::ServerMetrics(const std::string& model_name)
    : labels_("model_name=\"" + escape_label_value(model_name) + "\""),
      time_to_first_token_(kTimeToFirstTokenBuckets),
      inter_token_latency_(kTokenLatencyBuckets),
      time_per_output_token_(kTokenLatencyBuckets),
      e2e_latency_(kE2eLatencyBuckets) {
    for (FinishReason reason :
         {FinishReason::Stop, FinishReason::Length, FinishReason::Abort, FinishReason::Error}) {
        finished_by_reason_[to_string(reason)] = 0;
    }
}

void ServerMetrics::add_prompt_tokens(int64_t count) {
    std::lock_guard lock(mutex_);
    prompt_tokens_ += count;
}

void ServerMetrics::add_generation_tokens(int64_t count) {
    std::lock_guard lock(mutex_);
    generation_tokens_ += count;
}

void ServerMetrics::observe_time_to_first_token(double seconds) {
    std::lock_guard lock(mutex_);
    time_to_first_token_.observe(seconds);
}

void ServerMetrics::observe_inter_token_latency(double seconds) {
    std::lock_guard lock(mutex_);
    inter_token_latency_.observe(seconds);
}

void ServerMetrics::observe_finished(FinishReason reason, double e2e_seconds,
                                     double time_per_output_token_seconds) {
    std::lock_guard lock(mutex_);
    ++finished_by_reason_[to_string(reason)];
    e2e_latency_.observe(e2e_seconds);
    if (time_per_output_token_seconds > 0) time_per_output_token_.observe(time_per_output_token_seconds);
}

void ServerMetrics::count_http_response(int status) {
    std::lock_guard lock(mutex_);
    ++http_responses_[status];
}

void ServerMetrics::count_dropped_connection() {
    std::lock_guard lock(mutex_);
    ++dropped_connections_;
}

void ServerMetrics::set_gauges(const EngineGauges& gauges) {
    std::lock_guard lock(mutex_);
    gauges_ = gauges;
}

EngineGauges ServerMetrics::gauges() const {
    std::lock_guard lock(mutex_);
    return gauges_;
}

std::string ServerMetrics::render() const {
    std::lock_guard lock(mutex_);
    std::string out;
    auto gauge = [&](const char* name, const char* help, auto value) {
        header(out, name, "gauge", help);
        out += fmt::format("{}{{{}}} {}\n", name, labels_, value);
    };
    auto counter = [&](const char* name, const char* help, auto value) {
        header(out, name, "counter", help);
        out += fmt::format("{}_total{{{}}} {}\n", name, labels_, value);
    };
    auto histogram = [&](const char* name, const char* help, const Histogram& values) {
        header(out, name, "histogram", help);
        values.render(name, labels_, out);
    };
    gauge("vllm:num_requests_running", "Sequences in the running batch.", gauges_.num_running);
    gauge("vllm:num_requests_waiting", "Sequences waiting to be scheduled.", gauges_.num_waiting);
    gauge("vllm:kv_cache_usage_perc", "KV cache usage; 1 means 100 percent.", gauges_.kv_cache_usage);
    counter("vllm:prefix_cache_queries", "Prompt tokens looked up in the prefix cache.",
            gauges_.prefix_cache_queries);
    counter("vllm:prefix_cache_hits", "Prompt tokens found in the prefix cache.", gauges_.prefix_cache_hits);
    counter("vllm:num_preemptions", "Preempted sequences.", gauges_.num_preemptions);
    if (gauges_.kv_offload_enabled) {
        counter("lmrun:kv_offload_loaded_tokens",
                "Prompt tokens loaded from --kv-offload-dir instead of computed.",
                gauges_.kv_offload_loaded_tokens);
        counter("lmrun:kv_offload_hits", "KV blocks read from --kv-offload-dir.", gauges_.kv_offload_hits);
        counter("lmrun:kv_offload_misses", "KV block reads that found nothing usable.",
                gauges_.kv_offload_misses);
        counter("lmrun:kv_offload_corrupt",
                "KV block files that failed their checks (deleted, counted as misses).",
                gauges_.kv_offload_corrupt);
        counter("lmrun:kv_offload_read_bytes", "Bytes read from --kv-offload-dir.",
                gauges_.kv_offload_read_bytes);
        counter("lmrun:kv_offload_written_bytes", "Bytes written to --kv-offload-dir.",
                gauges_.kv_offload_written_bytes);
        counter("lmrun:kv_offload_dropped", "Computed KV blocks not written because the writer was behind.",
                gauges_.kv_offload_dropped);
        counter("lmrun:kv_offload_evictions", "KV block files evicted to stay within --kv-offload-size.",
                gauges_.kv_offload_evictions);
    }
    counter("vllm:prompt_tokens", "Prompt tokens of admitted requests.", prompt_tokens_);
    counter("vllm:generation_tokens", "Generated tokens.", generation_tokens_);
    header(out, "vllm:request_success", "counter", "Finished completions by finish reason.");
    for (const auto& [reason, count] : finished_by_reason_) {
        out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels_, reason,
                           count);
    }
    histogram("vllm:time_to_first_token_seconds", "Time to first token.", time_to_first_token_);
    histogram("vllm:inter_token_latency_seconds", "Time between consecutive tokens.", inter_token_latency_);
    histogram("vllm:time_per_output_token_seconds", "Mean time per output token of a request.",
              time_per_output_token_);
    histogram("vllm:e2e_request_latency_seconds", "End-to-end request latency.", e2e_latency_);
    header(out, "lmrun:http_responses", "counter", "HTTP responses of the API endpoints by status.");
    for (const auto& [status, count] : http_responses_) {
        out += fmt::format("lmrun:http_responses_total{{{},status=\"{}\"}} {}\n", labels_, status, count);
    }
    counter("lmrun:http_connections_dropped",
            "Connections closed for not sending a whole request in time (--request-timeout).",
            dropped_connections_);
    return out;
}

}  // namespace lmrun::server
