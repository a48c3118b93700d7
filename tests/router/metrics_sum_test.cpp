#include "router/metrics_sum.h"

#include <gtest/gtest.h>

namespace lmrun::router {
namespace {

const char* kWorkerA =
    "# HELP vllm:num_requests_running Sequences in the running batch.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{model_name=\"m\"} 2\n"
    "# HELP vllm:kv_cache_usage_perc KV cache usage; 1 means 100 percent.\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n"
    "# HELP vllm:request_success Finished completions by finish reason.\n"
    "# TYPE vllm:request_success counter\n"
    "vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 3\n"
    "# HELP vllm:e2e_request_latency_seconds End-to-end request latency.\n"
    "# TYPE vllm:e2e_request_latency_seconds histogram\n"
    "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"0.1\"} 1\n"
    "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 3\n"
    "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} 0.75\n"
    "vllm:e2e_request_latency_seconds_count{model_name=\"m\"} 3\n";

const char* kWorkerB =
    "# HELP vllm:num_requests_running Sequences in the running batch.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{model_name=\"m\"} 5\n"
    "# HELP vllm:kv_cache_usage_perc KV cache usage; 1 means 100 percent.\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n"
    "# HELP vllm:request_success Finished completions by finish reason.\n"
    "# TYPE vllm:request_success counter\n"
    "vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 1\n"
    "vllm:request_success_total{model_name=\"m\",finished_reason=\"length\"} 7\n"
    "# HELP vllm:e2e_request_latency_seconds End-to-end request latency.\n"
    "# TYPE vllm:e2e_request_latency_seconds histogram\n"
    "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"0.1\"} 0\n"
    "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 1\n"
    "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} 0.5\n"
    "vllm:e2e_request_latency_seconds_count{model_name=\"m\"} 1\n";

TEST(MetricsSum, AddsCountersAndHistogramsAndAveragesFractions) {
    const std::string sum = sum_prometheus_texts({kWorkerA, kWorkerB});
    EXPECT_NE(sum.find("vllm:num_requests_running{model_name=\"m\"} 7\n"), std::string::npos) << sum;
    EXPECT_NE(sum.find("vllm:kv_cache_usage_perc{model_name=\"m\"} 0.375\n"), std::string::npos) << sum;
    EXPECT_NE(sum.find("vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 4\n"),
              std::string::npos);
    EXPECT_NE(sum.find("vllm:request_success_total{model_name=\"m\",finished_reason=\"length\"} 7\n"),
              std::string::npos);
    EXPECT_NE(sum.find("vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 4\n"),
              std::string::npos);
    EXPECT_NE(sum.find("vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} 1.25\n"), std::string::npos);
}

TEST(MetricsSum, KeepsEachFamilyTogetherWithItsCommentsOnce) {
    const std::string sum = sum_prometheus_texts({kWorkerA, kWorkerB});
    // "length" appears only in B, yet sits with its family, before the next family's comments.
    const size_t length = sum.find("finished_reason=\"length\"");
    const size_t next_family = sum.find("# HELP vllm:e2e_request_latency_seconds");
    ASSERT_NE(length, std::string::npos);
    EXPECT_LT(length, next_family);
    size_t count = 0;
    for (size_t at = sum.find("# TYPE vllm:request_success counter"); at != std::string::npos;
         at = sum.find("# TYPE vllm:request_success counter", at + 1))
        ++count;
    EXPECT_EQ(count, 1u);
}

TEST(MetricsSum, OneTextIsUnchangedAndNoneIsEmpty) {
    EXPECT_EQ(sum_prometheus_texts({kWorkerA}), kWorkerA);
    EXPECT_EQ(sum_prometheus_texts({}), "");
}

}  // namespace
}  // namespace lmrun::router
