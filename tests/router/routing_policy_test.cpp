// Each policy's decisions on scripted worker states: which worker, and why.
#include "router/routing_policy.h"

#include <gtest/gtest.h>

namespace lmrun::router {
namespace {

WorkerView worker(int32_t id, int64_t load_tokens, int64_t matched_bytes = 0, int64_t cached_bytes = 0) {
    WorkerView view;
    view.id = id;
    view.load_tokens = load_tokens;
    view.matched_bytes = matched_bytes;
    view.cached_bytes = cached_bytes;
    return view;
}

RoutingRequest request(int64_t prompt_bytes, std::string session_key = "") {
    RoutingRequest r;
    r.prompt_bytes = prompt_bytes;
    r.session_key = std::move(session_key);
    return r;
}

std::unique_ptr<RoutingPolicy> policy(PolicyKind kind) {
    PolicyOptions options;
    options.kind = kind;
    options.cache_threshold = 0.5;
    options.balance_abs_tokens = 1000;
    options.balance_rel = 1.5;
    options.max_sessions = 2;
    return make_routing_policy(options);
}

TEST(RoutingPolicy, ParsesNames) {
    EXPECT_EQ(parse_policy_kind("cache_aware").value(), PolicyKind::CacheAware);
    EXPECT_EQ(parse_policy_kind("least_load").value(), PolicyKind::LeastLoad);
    EXPECT_EQ(policy_kind_name(parse_policy_kind("session").value()), std::string("session"));
    EXPECT_FALSE(parse_policy_kind("random").ok());
}

TEST(RoutingPolicy, RoundRobinTakesTurnsWhateverTheLoad) {
    auto round_robin = policy(PolicyKind::RoundRobin);
    const std::vector<WorkerView> workers = {worker(4, 100000), worker(7, 0), worker(9, 5)};
    std::vector<int32_t> chosen;
    for (int i = 0; i < 6; ++i) chosen.push_back(round_robin->choose(request(10), workers).worker_id);
    EXPECT_EQ(chosen, (std::vector<int32_t>{4, 7, 9, 4, 7, 9}));
    EXPECT_EQ(round_robin->choose(request(10), workers).reason, RouteReason::RoundRobin);
}

TEST(RoutingPolicy, LeastLoadPicksTheFewestTokensAndRotatesTies) {
    auto least_load = policy(PolicyKind::LeastLoad);
    EXPECT_EQ(
        least_load
            ->choose(request(10), std::vector<WorkerView>{worker(0, 500), worker(1, 20), worker(2, 300)})
            .worker_id,
        1);
    // Equal loads: successive requests spread instead of piling on the first worker.
    const std::vector<WorkerView> idle = {worker(0, 0), worker(1, 0)};
    const int32_t first = least_load->choose(request(10), idle).worker_id;
    const int32_t second = least_load->choose(request(10), idle).worker_id;
    EXPECT_NE(first, second);
    // Equal loads, unequal cached text: the one with the most room.
    EXPECT_EQ(least_loaded(std::vector<WorkerView>{worker(0, 0, 0, 900), worker(1, 0, 0, 100)}, 0), 1u);
}

TEST(RoutingPolicy, SessionSticksAndMovesWhenItsWorkerIsGone) {
    auto session = policy(PolicyKind::Session);
    const std::vector<WorkerView> both = {worker(0, 0), worker(1, 50)};
    RoutingDecision alice = session->choose(request(10, "alice"), both);
    EXPECT_EQ(alice.worker_id, 0);  // new key: least loaded
    EXPECT_EQ(alice.reason, RouteReason::LeastLoad);
    // alice stays on 0 even when 0 becomes the busier one.
    const std::vector<WorkerView> busy0 = {worker(0, 9000), worker(1, 50)};
    alice = session->choose(request(10, "alice"), busy0);
    EXPECT_EQ(alice.worker_id, 0);
    EXPECT_EQ(alice.reason, RouteReason::Session);
    EXPECT_EQ(session->choose(request(10, "bob"), busy0).worker_id, 1);
    // Worker 0 is gone: alice moves to 1, and stays there when 0 comes back.
    EXPECT_EQ(session->choose(request(10, "alice"), std::vector<WorkerView>{worker(1, 50)}).worker_id, 1);
    const RoutingDecision back = session->choose(request(10, "alice"), both);
    EXPECT_EQ(back.worker_id, 1);
    EXPECT_EQ(back.reason, RouteReason::Session);
    // No key: least loaded.
    EXPECT_EQ(session->choose(request(10), busy0).worker_id, 1);
}

TEST(SessionTable, ForgetsTheLeastRecentlyUsedKey) {
    SessionTable table(2);
    table.assign("a", 0);
    table.assign("b", 1);
    EXPECT_EQ(table.find("a"), 0);  // a is now more recent than b
    table.assign("c", 2);           // b goes
    EXPECT_EQ(table.find("b"), -1);
    EXPECT_EQ(table.find("a"), 0);
    EXPECT_EQ(table.find("c"), 2);
    EXPECT_EQ(table.size(), 2u);
}

TEST(RoutingPolicy, CacheAwarePrefersTheLongestMatch) {
    auto cache_aware = policy(PolicyKind::CacheAware);
    // Worker 1 holds 80 of the 100 bytes; it is busier, but not past both thresholds.
    const RoutingDecision decision = cache_aware->choose(
        request(100), std::vector<WorkerView>{worker(0, 100, 10), worker(1, 900, 80), worker(2, 0, 40)});
    EXPECT_EQ(decision.worker_id, 1);
    EXPECT_EQ(decision.reason, RouteReason::CacheMatch);
}

TEST(RoutingPolicy, CacheAwareBelowTheThresholdGoesToTheLeastLoaded) {
    auto cache_aware = policy(PolicyKind::CacheAware);
    // 40 of 100 bytes < cache_threshold 0.5: not worth it.
    const RoutingDecision decision =
        cache_aware->choose(request(100), std::vector<WorkerView>{worker(0, 300, 40), worker(1, 200, 0)});
    EXPECT_EQ(decision.worker_id, 1);
    EXPECT_EQ(decision.reason, RouteReason::LeastLoad);
    // Nothing matched anywhere: least loaded, ties to the worker caching the least.
    EXPECT_EQ(
        cache_aware->choose(request(100), std::vector<WorkerView>{worker(0, 0, 0, 5000), worker(1, 0, 0, 10)})
            .worker_id,
        1);
}

TEST(RoutingPolicy, CacheAwareOverloadNeedsBothThresholds) {
    auto cache_aware = policy(PolicyKind::CacheAware);
    // 1200 above the least loaded (> 1000) but only 1.4x its load (< 1.5): still the match.
    EXPECT_EQ(
        cache_aware->choose(request(100), std::vector<WorkerView>{worker(0, 4200, 90), worker(1, 3000, 0)})
            .worker_id,
        0);
    // 1.9x but only 900 above: still the match.
    EXPECT_EQ(
        cache_aware->choose(request(100), std::vector<WorkerView>{worker(0, 1900, 90), worker(1, 1000, 0)})
            .worker_id,
        0);
    // 2000 above and 3x: overloaded, the least loaded worker gets it.
    const RoutingDecision decision =
        cache_aware->choose(request(100), std::vector<WorkerView>{worker(0, 3000, 90), worker(1, 1000, 0)});
    EXPECT_EQ(decision.worker_id, 1);
    EXPECT_EQ(decision.reason, RouteReason::LeastLoad);
}

TEST(RoutingPolicy, CacheAwareEqualMatchesGoToTheLessLoaded) {
    auto cache_aware = policy(PolicyKind::CacheAware);
    EXPECT_EQ(
        cache_aware->choose(request(100), std::vector<WorkerView>{worker(0, 700, 60), worker(1, 300, 60)})
            .worker_id,
        1);
}

}  // namespace
}  // namespace lmrun::router
