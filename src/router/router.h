// Router: the routing core behind `lmrun router` and `lmrun serve --data-parallel-size`,
// without any HTTP: the workers (their URLs, health and load), the routing policy, the
// PrefixTree of what was sent where, and the counters /metrics shows. Thread-safe (one
// mutex; every call is short: a policy decision is a walk of the prompt's text).
//
// Workers have stable ids (the PrefixTree's tenants). A worker is routable when it is
// listed and healthy; it starts unhealthy and becomes healthy on its first good load
// report. Load = its last reported queued + running tokens, plus the tokens the router
// sent it after that report's probe left (so a burst is spread before the next report).
//
// Health: a worker that cannot be reached (connection refused or broken) is down at once;
// probes that time out put it down after `failures_to_down` in a row; a worker that says
// it is draining (503) is down but its requests in flight are left to finish. A down
// worker's tree is forgotten (a restarted worker has an empty cache). Any good report
// brings it back.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "router/prefix_tree.h"
#include "router/routing_input.h"
#include "router/routing_policy.h"

namespace lmrun::router {

struct RouterOptions {
    PolicyOptions policy;
    size_t max_tree_bytes_per_worker = size_t(64) << 20;  // PrefixTree bound per worker
    double tree_bytes_per_kv_token = 4;  // a worker's bound is also its KV capacity x this, when reported
    int failures_to_down = 3;            // probes timing out in a row before a worker is taken out
};

// What a worker's GET /load reports.
struct LoadReport {
    int64_t load_tokens = 0;         // queued + running tokens
    int64_t kv_capacity_tokens = 0;  // 0 = unknown
};

enum class WorkerFailure {
    Unreachable,  // connection refused or broken: down at once, its requests cancelled
    Timeout,      // no answer in time: down after failures_to_down in a row, its requests cancelled
    Draining,     // answered 503: down, its requests left to finish
};

// What a report changed.
enum class HealthChange { None, Up, Down };

struct Route {
    int32_t worker_id = -1;
    std::string url;
    RouteReason reason = RouteReason::LeastLoad;
    int64_t estimated_tokens = 0;
};

// One worker as /metrics and tests see it.
struct WorkerStatus {
    int32_t id = 0;
    std::string url;
    bool listed = false;
    bool healthy = false;
    int64_t load_tokens = 0;
    int64_t num_in_flight = 0;
    int64_t num_requests = 0;  // routed to it (retries included)
    int64_t num_failures = 0;
    int64_t tree_bytes = 0;
};

class Router {
  public:
    explicit Router(RouterOptions options);
    ~Router();

    // The workers to route to: new URLs are added (unhealthy until probed), missing ones
    // retired (their requests in flight go on). Returns the ids of the added workers.
    std::vector<int32_t> set_worker_urls(const std::vector<std::string>& urls);

    // A worker for this request among the routable ones not in `exclude` (workers it already
    // failed on); nullopt when there is none. Counts it as in flight on that worker.
    std::optional<Route> route(const RoutingInput& input, std::span<const int32_t> exclude);
    // A request routed by route() ended (whatever the outcome).
    void finish(const Route& route);
    // Whether some routable worker is not in `exclude`.
    bool has_candidate(std::span<const int32_t> exclude) const;

    // Probes: begin_probe() before sending one (returns a mark), then one of the reports.
    uint64_t begin_probe(int32_t worker_id);
    HealthChange report_load(int32_t worker_id, uint64_t probe_mark, const LoadReport& report);
    HealthChange report_failure(int32_t worker_id, WorkerFailure failure);

    void count_retry();
    void count_stream_error();
    void count_response(int status);

    std::vector<WorkerStatus> workers() const;
    std::string worker_url(int32_t worker_id) const;
    int64_t num_routable() const;
    PolicyKind policy_kind() const { return options_.policy.kind; }
    // Prometheus text of the router's own metrics.
    std::string render_metrics() const;

  private:
    struct Worker;

    Worker* find(int32_t worker_id);
    int64_t load_of(const Worker& worker) const;
    void take_down(Worker& worker, const char* why);

    const RouterOptions options_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Worker>> workers_;  // index = id
    std::unique_ptr<RoutingPolicy> policy_;
    PrefixTree tree_;
    std::vector<int64_t> matched_scratch_;
    std::vector<WorkerView> views_scratch_;
    int64_t num_retries_ = 0;
    int64_t num_stream_errors_ = 0;
    int64_t prompt_bytes_total_ = 0;
    int64_t matched_bytes_total_ = 0;  // of the chosen worker: the hit-rate estimate's numerator
    std::map<RouteReason, int64_t> decisions_;
    std::map<int, int64_t> responses_;
};

}  // namespace lmrun::router
