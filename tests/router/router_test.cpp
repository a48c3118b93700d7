// The routing core without HTTP: worker list changes, health transitions, load accounting
// between reports, the prefix tree behind cache_aware, and the metrics it renders.
#include "router/router.h"

#include <gtest/gtest.h>

namespace lmrun::router {
namespace {

RouterOptions options(PolicyKind kind) {
    RouterOptions options;
    options.policy.kind = kind;
    options.policy.balance_abs_tokens = 1000;
    options.policy.balance_rel = 1.5;
    options.failures_to_down = 2;
    return options;
}

RoutingInput input(std::string text, std::string session = "") {
    RoutingInput in;
    in.prompt_text = std::move(text);
    in.session_key = std::move(session);
    in.estimated_tokens = int64_t(in.prompt_text.size() / 4) + 1;
    return in;
}

void bring_up(Router& router, int32_t id, int64_t load = 0) {
    router.report_load(id, router.begin_probe(id), LoadReport{load, 0});
}

TEST(Router, WorkersStartDownAndComeUpOnTheirFirstReport) {
    Router router(options(PolicyKind::RoundRobin));
    EXPECT_EQ(router.set_worker_urls({"http://a:1", "http://b:2"}), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(router.num_routable(), 0);
    EXPECT_FALSE(router.route(input("x"), {}).has_value());
    EXPECT_EQ(router.report_load(0, router.begin_probe(0), LoadReport{}), HealthChange::Up);
    EXPECT_EQ(router.report_load(0, router.begin_probe(0), LoadReport{}), HealthChange::None);
    EXPECT_EQ(router.num_routable(), 1);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(router.route(input("x"), {})->url, "http://a:1");
}

TEST(Router, UnreachableIsDownAtOnceTimeoutsAfterAStreakDrainingWithoutCancelling) {
    Router router(options(PolicyKind::RoundRobin));
    router.set_worker_urls({"http://a:1", "http://b:2", "http://c:3"});
    for (int32_t id : {0, 1, 2}) bring_up(router, id);
    EXPECT_EQ(router.report_failure(0, WorkerFailure::Unreachable), HealthChange::Down);
    EXPECT_EQ(router.report_failure(1, WorkerFailure::Timeout), HealthChange::None);  // one strike
    EXPECT_EQ(router.num_routable(), 2);
    EXPECT_EQ(router.report_failure(1, WorkerFailure::Timeout), HealthChange::Down);
    EXPECT_EQ(router.report_failure(2, WorkerFailure::Draining),
              HealthChange::None);  // out, requests not cut
    EXPECT_EQ(router.num_routable(), 0);
    // A good report resets the streak and brings it back.
    EXPECT_EQ(router.report_load(1, router.begin_probe(1), LoadReport{}), HealthChange::Up);
    EXPECT_EQ(router.report_failure(1, WorkerFailure::Timeout), HealthChange::None);
    EXPECT_EQ(router.num_routable(), 1);
}

TEST(Router, ExcludedWorkersAreSkippedForRetries) {
    Router router(options(PolicyKind::RoundRobin));
    router.set_worker_urls({"http://a:1", "http://b:2"});
    bring_up(router, 0);
    bring_up(router, 1);
    const std::vector<int32_t> tried = {0};
    for (int i = 0; i < 3; ++i) EXPECT_EQ(router.route(input("x"), tried)->worker_id, 1);
    EXPECT_TRUE(router.has_candidate(tried));
    EXPECT_FALSE(router.has_candidate(std::vector<int32_t>{0, 1}));
}

TEST(Router, LoadCountsWhatWasSentSinceTheReportsProbe) {
    Router router(options(PolicyKind::LeastLoad));
    router.set_worker_urls({"http://a:1", "http://b:2"});
    bring_up(router, 0, 100);
    bring_up(router, 1, 0);
    // 4000 bytes ~ 1001 tokens: the first goes to b (0 tokens), the next to a (100 < 1001).
    const Route first = *router.route(input(std::string(4000, 'x')), {});
    EXPECT_EQ(first.worker_id, 1);
    EXPECT_EQ(router.workers()[1].load_tokens, 1001);
    EXPECT_EQ(router.route(input(std::string(4000, 'y')), {})->worker_id, 0);
    // A probe that left before those were sent does not count them twice...
    const uint64_t mark = router.begin_probe(1);
    router.report_load(1, mark, LoadReport{900, 0});
    EXPECT_EQ(router.workers()[1].load_tokens, 900);
    // ...and what is sent after it is added to its report.
    router.route(input(std::string(40, 'z')), std::vector<int32_t>{0});
    EXPECT_EQ(router.workers()[1].load_tokens, 911);
    EXPECT_EQ(router.workers()[1].num_in_flight, 2);
    router.finish(first);
    EXPECT_EQ(router.workers()[1].num_in_flight, 1);
}

TEST(Router, CacheAwareFollowsTheConversationAndEstimatesHits) {
    Router router(options(PolicyKind::CacheAware));
    router.set_worker_urls({"http://a:1", "http://b:2"});
    bring_up(router, 0);
    bring_up(router, 1);
    const std::string system_a = "You are a pirate. Speak like one at all times, matey. ";
    const std::string system_b = "You are a lawyer. Answer in clauses and sub-clauses only. ";
    const Route a1 = *router.route(input(system_a + "user: hi"), {});
    const Route b1 = *router.route(input(system_b + "user: hi"), {});
    EXPECT_NE(a1.worker_id, b1.worker_id);  // the second goes to the other, less loaded worker
    EXPECT_EQ(a1.reason, RouteReason::LeastLoad);
    // Next turns and other users of the same system prompt follow the cache.
    const Route a2 = *router.route(input(system_a + "user: hi|assistant: arr|user: more"), {});
    EXPECT_EQ(a2.worker_id, a1.worker_id);
    EXPECT_EQ(a2.reason, RouteReason::CacheMatch);
    EXPECT_EQ(router.route(input(system_b + "user: what is a tort"), {})->worker_id, b1.worker_id);
    const std::string metrics = router.render_metrics();
    EXPECT_NE(metrics.find("lmrun:router_decisions_total{reason=\"cache_match\"} 2"), std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("lmrun:router_policy{policy=\"cache_aware\"} 1"), std::string::npos);
    EXPECT_NE(metrics.find("lmrun:router_cache_hit_rate_estimate 0."), std::string::npos);
}

TEST(Router, AWorkerTakenDownLosesItsCachedPrefixes) {
    Router router(options(PolicyKind::CacheAware));
    router.set_worker_urls({"http://a:1", "http://b:2"});
    bring_up(router, 0);
    bring_up(router, 1, 5);
    const std::string text = "a long shared system prompt that both would like to have";
    EXPECT_EQ(router.route(input(text), {})->worker_id, 0);
    EXPECT_GT(router.workers()[0].tree_bytes, 0);
    router.report_failure(0, WorkerFailure::Unreachable);
    EXPECT_EQ(router.workers()[0].tree_bytes, 0);
    EXPECT_EQ(router.route(input(text), {})->worker_id, 1);
    bring_up(router, 0);  // back, with an empty cache: the prefix stays with worker 1
    EXPECT_EQ(router.route(input(text + " and more"), {})->worker_id, 1);
}

TEST(Router, RemovedWorkersGetNothingAndReturnWithTheirId) {
    Router router(options(PolicyKind::RoundRobin));
    router.set_worker_urls({"http://a:1", "http://b:2"});
    bring_up(router, 0);
    bring_up(router, 1);
    router.set_worker_urls({"http://b:2"});
    for (int i = 0; i < 4; ++i) EXPECT_EQ(router.route(input("x"), {})->worker_id, 1);
    EXPECT_EQ(router.set_worker_urls({"http://b:2", "http://a:1", "http://c:3"}),
              (std::vector<int32_t>{0, 2}));
    EXPECT_EQ(router.num_routable(), 1);  // a must answer a probe again
    bring_up(router, 0);
    EXPECT_EQ(router.num_routable(), 2);
    const std::string metrics = router.render_metrics();
    EXPECT_NE(metrics.find("lmrun:router_requests_total{worker=\"http://b:2\"} 4"), std::string::npos)
        << metrics;
}

}  // namespace
}  // namespace lmrun::router
