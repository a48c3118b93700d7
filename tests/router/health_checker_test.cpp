// What the health checks read of a worker's GET /load.
#include "router/health_checker.h"

#include <gtest/gtest.h>

namespace lmrun::router {
namespace {

TEST(HealthChecker, ParsesALoadReport) {
    LoadReport report;
    ASSERT_TRUE(
        parse_load_report(R"({"load_tokens": 120, "kv_capacity_tokens": 32768, "num_running": 2})", report));
    EXPECT_EQ(report.load_tokens, 120);
    EXPECT_EQ(report.kv_capacity_tokens, 32768);
    // The capacity is optional (a worker that does not know it).
    ASSERT_TRUE(parse_load_report(R"({"load_tokens": 7})", report));
    EXPECT_EQ(report.load_tokens, 7);
    EXPECT_EQ(report.kv_capacity_tokens, 0);
}

TEST(HealthChecker, RefusesWhatIsNotALoadReport) {
    LoadReport report;
    for (const char* body : {"", "not json", "[]", R"({"load_tokens": "12"})", R"({"load_tokens": -1})",
                             R"({"load_tokens": 1.5})", R"({"kv_capacity_tokens": 3})"})
        EXPECT_FALSE(parse_load_report(body, report)) << body;
}

}  // namespace
}  // namespace lmrun::router
