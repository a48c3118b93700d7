#include "server/metrics.h"

#include <gtest/gtest.h>

namespace lmrun::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
    return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(Metrics, HistogramIsCumulative) {
    Histogram histogram({0.1, 1.0});
    histogram.observe(0.05);
    histogram.observe(0.1);  // upper bounds are inclusive
    histogram.observe(0.5);
    histogram.observe(3.0);
    std::string out;
    histogram.render("h", "a=\"b\"", out);
    EXPECT_TRUE(has_line(out, "h_bucket{a=\"b\",le=\"0.1\"} 2")) << out;
    EXPECT_TRUE(has_line(out, "h_bucket{a=\"b\",le=\"1\"} 3")) << out;
    EXPECT_TRUE(has_line(out, "h_bucket{a=\"b\",le=\"+Inf\"} 4")) << out;
    EXPECT_TRUE(has_line(out, "h_count{a=\"b\"} 4")) << out;
    EXPECT_TRUE(has_line(out, "h_sum{a=\"b\"} 3.65")) << out;
}

TEST(Metrics, RendersVllmNames) {
    ServerMetrics metrics("stories260k");
    metrics.add_prompt_tokens(12);
    metrics.add_prompt_tokens(3);
    metrics.add_generation_tokens(40);
    metrics.observe_time_to_first_token(0.02);
    metrics.observe_inter_token_latency(0.003);
    metrics.observe_finished(FinishReason::Length, 0.5, 0.01);
    metrics.observe_finished(FinishReason::Stop, 0.25, 0);
    metrics.count_http_response(429);
    EngineGauges gauges;
    gauges.num_running = 3;
    gauges.num_waiting = 2;
    gauges.kv_cache_usage = 0.25;
    gauges.prefix_cache_queries = 512;
    gauges.prefix_cache_hits = 256;
    metrics.set_gauges(gauges);
    const std::string text = metrics.render();
    const std::string l = "{model_name=\"stories260k\"}";
    EXPECT_TRUE(has_line(text, "vllm:num_requests_running" + l + " 3")) << text;
    EXPECT_TRUE(has_line(text, "vllm:num_requests_waiting" + l + " 2"));
    EXPECT_TRUE(has_line(text, "vllm:kv_cache_usage_perc" + l + " 0.25"));
    EXPECT_TRUE(has_line(text, "vllm:prefix_cache_queries_total" + l + " 512"));
    EXPECT_TRUE(has_line(text, "vllm:prefix_cache_hits_total" + l + " 256"));
    EXPECT_TRUE(has_line(text, "vllm:prompt_tokens_total" + l + " 15"));
    EXPECT_TRUE(has_line(text, "vllm:generation_tokens_total" + l + " 40"));
    EXPECT_TRUE(has_line(
        text, "vllm:request_success_total{model_name=\"stories260k\",finished_reason=\"length\"} 1"));
    EXPECT_TRUE(
        has_line(text, "vllm:request_success_total{model_name=\"stories260k\",finished_reason=\"stop\"} 1"));
    EXPECT_TRUE(
        has_line(text, "vllm:request_success_total{model_name=\"stories260k\",finished_reason=\"abort\"} 0"));
    EXPECT_TRUE(has_line(text, "vllm:time_to_first_token_seconds_count" + l + " 1"));
    EXPECT_TRUE(has_line(text, "vllm:inter_token_latency_seconds_count" + l + " 1"));
    EXPECT_TRUE(has_line(text, "vllm:e2e_request_latency_seconds_count" + l + " 2"));
    EXPECT_TRUE(
        has_line(text, "vllm:time_per_output_token_seconds_count" + l + " 1"));  // 0 = one-token request
    EXPECT_TRUE(has_line(text, "lmrun:http_responses_total{model_name=\"stories260k\",status=\"429\"} 1"));
    EXPECT_TRUE(has_line(text, "# TYPE vllm:time_to_first_token_seconds histogram"));
    EXPECT_TRUE(has_line(text, "# TYPE vllm:prompt_tokens counter"));
}

TEST(Metrics, KvOffloadCountersOnlyWhenTheTierIsOn) {
    ServerMetrics metrics("m");
    EngineGauges gauges;
    metrics.set_gauges(gauges);
    EXPECT_EQ(metrics.render().find("lmrun:kv_offload"), std::string::npos);
    gauges.kv_offload_enabled = true;
    gauges.kv_offload_loaded_tokens = 3840;
    gauges.kv_offload_hits = 15;
    gauges.kv_offload_corrupt = 1;
    gauges.kv_offload_read_bytes = 123456;
    metrics.set_gauges(gauges);
    const std::string text = metrics.render();
    const std::string l = "{model_name=\"m\"}";
    EXPECT_TRUE(has_line(text, "lmrun:kv_offload_loaded_tokens_total" + l + " 3840")) << text;
    EXPECT_TRUE(has_line(text, "lmrun:kv_offload_hits_total" + l + " 15"));
    EXPECT_TRUE(has_line(text, "lmrun:kv_offload_corrupt_total" + l + " 1"));
    EXPECT_TRUE(has_line(text, "lmrun:kv_offload_read_bytes_total" + l + " 123456"));
    EXPECT_TRUE(has_line(text, "lmrun:kv_offload_misses_total" + l + " 0"));
}

TEST(Metrics, EscapesLabelValues) {
    EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    ServerMetrics metrics("we\"ird");
    EXPECT_NE(metrics.render().find("model_name=\"we\\\"ird\""), std::string::npos);
}

}  // namespace
}  // namespace lmrun::server
