#include "router/router.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/logging.h"
#include "server/metrics.h"

namespace lmrun::router {

struct Router::Worker {
    int32_t id = 0;
    std::string url;
    bool listed = true;
    bool healthy = false;
    int consecutive_failures = 0;
    int64_t reported_load_tokens = 0;
    int64_t kv_capacity_tokens = 0;
    uint64_t dispatched_tokens = 0;  // ever sent to it (estimated)
    uint64_t report_mark = 0;        // dispatched_tokens when the last report's probe left
    int64_t num_in_flight = 0;
    int64_t num_requests = 0;
    int64_t num_failures = 0;
};

Router::Router(RouterOptions options)
    : options_(options),
      policy_(make_routing_policy(options.policy)),
      tree_(options.max_tree_bytes_per_worker) {}

Router::~Router() = default;

Router::Worker* Router::find(int32_t worker_id) {
    if (worker_id < 0 || size_t(worker_id) >= workers_.size()) return nullptr;
    return workers_[size_t(worker_id)].get();
}

int64_t Router::load_of(const Worker& worker) const {
    return worker.reported_load_tokens + int64_t(worker.dispatched_tokens - worker.report_mark);
}

std::vector<int32_t> Router::set_worker_urls(const std::vector<std::string>& urls) {
    std::lock_guard lock(mutex_);
    std::vector<int32_t> added;
    for (auto& worker : workers_) {
        const bool listed = std::find(urls.begin(), urls.end(), worker->url) != urls.end();
        if (worker->listed && !listed) {
            log_info("router: worker {} removed from the list", worker->url);
            worker->healthy = false;
            tree_.remove_tenant(worker->id);
        }
        if (!worker->listed && listed) added.push_back(worker->id);
        worker->listed = listed;
    }
    for (const std::string& url : urls) {
        const bool known =
            std::any_of(workers_.begin(), workers_.end(), [&](const auto& w) { return w->url == url; });
        if (known) continue;
        auto worker = std::make_unique<Worker>();
        worker->id = int32_t(workers_.size());
        worker->url = url;
        added.push_back(worker->id);
        workers_.push_back(std::move(worker));
    }
    return added;
}

std::optional<Route> Router::route(const RoutingInput& input, std::span<const int32_t> exclude) {
    std::lock_guard lock(mutex_);
    tree_.match(input.prompt_text, matched_scratch_);
    views_scratch_.clear();
    for (const auto& worker : workers_) {
        if (!worker->listed || !worker->healthy) continue;
        if (std::find(exclude.begin(), exclude.end(), worker->id) != exclude.end()) continue;
        WorkerView view;
        view.id = worker->id;
        view.load_tokens = load_of(*worker);
        view.cached_bytes = int64_t(tree_.tenant_bytes(worker->id));
        view.matched_bytes =
            size_t(worker->id) < matched_scratch_.size() ? matched_scratch_[size_t(worker->id)] : 0;
        views_scratch_.push_back(view);
    }
    if (views_scratch_.empty()) return std::nullopt;
    RoutingRequest request;
    request.session_key = input.session_key;
    request.prompt_bytes = int64_t(input.prompt_text.size());
    const RoutingDecision decision = policy_->choose(request, views_scratch_);
    Worker& worker = *find(decision.worker_id);
    const int64_t matched =
        size_t(worker.id) < matched_scratch_.size() ? matched_scratch_[size_t(worker.id)] : 0;
    prompt_bytes_total_ += request.prompt_bytes;
    matched_bytes_total_ += matched;
    ++decisions_[decision.reason];
    tree_.insert(input.prompt_text, worker.id);
    const int64_t tokens = std::max<int64_t>(input.estimated_tokens, 1);
    worker.dispatched_tokens += uint64_t(tokens);
    ++worker.num_in_flight;
    ++worker.num_requests;
    return Route{worker.id, worker.url, decision.reason, tokens};
}

void Router::finish(const Route& route) {
    std::lock_guard lock(mutex_);
    if (Worker* worker = find(route.worker_id)) --worker->num_in_flight;
}

bool Router::has_candidate(std::span<const int32_t> exclude) const {
    std::lock_guard lock(mutex_);
    return std::any_of(workers_.begin(), workers_.end(), [&](const auto& worker) {
        return worker->listed && worker->healthy &&
               std::find(exclude.begin(), exclude.end(), worker->id) == exclude.end();
    });
}

uint64_t Router::begin_probe(int32_t worker_id) {
    std::lock_guard lock(mutex_);
    Worker* worker = find(worker_id);
    return worker ? worker->dispatched_tokens : 0;
}

HealthChange Router::report_load(int32_t worker_id, uint64_t probe_mark, const LoadReport& report) {
    std::lock_guard lock(mutex_);
    Worker* worker = find(worker_id);
    if (!worker || !worker->listed) return HealthChange::None;
    worker->reported_load_tokens = report.load_tokens;
    worker->report_mark = std::max(worker->report_mark, probe_mark);
    worker->consecutive_failures = 0;
    if (report.kv_capacity_tokens > 0 && report.kv_capacity_tokens != worker->kv_capacity_tokens) {
        worker->kv_capacity_tokens = report.kv_capacity_tokens;
        const auto bound = size_t(double(report.kv_capacity_tokens) * options_.tree_bytes_per_kv_token);
        tree_.set_limit(worker->id, std::min(bound, options_.max_tree_bytes_per_worker));
    }
    if (worker->healthy) return HealthChange::None;
    worker->healthy = true;
    log_info("router: worker {} is up", worker->url);
    return HealthChange::Up;
}

void Router::take_down(Worker& worker, const char* why) {
    worker.healthy = false;
    tree_.remove_tenant(worker.id);
    log_warn("router: worker {} is taken out: {}", worker.url, why);
}

HealthChange Router::report_failure(int32_t worker_id, WorkerFailure failure) {
    std::lock_guard lock(mutex_);
    Worker* worker = find(worker_id);
    if (!worker) return HealthChange::None;
    ++worker->num_failures;
    ++worker->consecutive_failures;
    if (!worker->healthy) return HealthChange::None;
    switch (failure) {
        case WorkerFailure::Unreachable:
            take_down(*worker, "unreachable");
            return HealthChange::Down;
        case WorkerFailure::Timeout:
            if (worker->consecutive_failures < options_.failures_to_down) return HealthChange::None;
            take_down(*worker, "not answering");
            return HealthChange::Down;
        case WorkerFailure::Draining:
            take_down(*worker, "draining");
            return HealthChange::None;  // its requests in flight may finish
    }
    return HealthChange::None;
}

void Router::count_retry() {
    std::lock_guard lock(mutex_);
    ++num_retries_;
}

void Router::count_stream_error() {
    std::lock_guard lock(mutex_);
    ++num_stream_errors_;
}

void Router::count_response(int status) {
    std::lock_guard lock(mutex_);
    ++responses_[status];
}

std::vector<WorkerStatus> Router::workers() const {
    std::lock_guard lock(mutex_);
    std::vector<WorkerStatus> statuses;
    for (const auto& worker : workers_) {
        WorkerStatus status;
        status.id = worker->id;
        status.url = worker->url;
        status.listed = worker->listed;
        status.healthy = worker->healthy;
        status.load_tokens = load_of(*worker);
        status.num_in_flight = worker->num_in_flight;
        status.num_requests = worker->num_requests;
        status.num_failures = worker->num_failures;
        status.tree_bytes = int64_t(tree_.tenant_bytes(worker->id));
        statuses.push_back(std::move(status));
    }
    return statuses;
}

std::string Router::worker_url(int32_t worker_id) const {
    std::lock_guard lock(mutex_);
    if (worker_id < 0 || size_t(worker_id) >= workers_.size()) return {};
    return workers_[size_t(worker_id)]->url;
}

int64_t Router::num_routable() const {
    std::lock_guard lock(mutex_);
    return std::count_if(workers_.begin(), workers_.end(),
                         [](const auto& w) { return w->listed && w->healthy; });
}

namespace {

void family(std::string& out, const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string Router::render_metrics() const {
    const std::vector<WorkerStatus> statuses = workers();
    std::lock_guard lock(mutex_);
    std::string out;
    auto per_worker = [&](const char* name, const char* type, const char* help, auto value_of) {
        family(out, name, type, help);
        for (const WorkerStatus& worker : statuses) {
            if (!worker.listed) continue;
            out += fmt::format("{}{{worker=\"{}\"}} {}\n", name, server::escape_label_value(worker.url),
                               value_of(worker));
        }
    };
    per_worker("lmrun:router_worker_healthy", "gauge", "1 when the worker takes requests.",
               [](const WorkerStatus& w) { return w.healthy ? 1 : 0; });
    per_worker("lmrun:router_requests_total", "counter", "Requests sent to the worker (retries included).",
               [](const WorkerStatus& w) { return w.num_requests; });
    per_worker("lmrun:router_requests_in_flight", "gauge", "Requests sent to the worker and not ended.",
               [](const WorkerStatus& w) { return w.num_in_flight; });
    per_worker("lmrun:router_worker_load_tokens", "gauge",
               "Queued and running tokens: the worker's last report plus what was sent since.",
               [](const WorkerStatus& w) { return w.load_tokens; });
    per_worker("lmrun:router_worker_failures_total", "counter", "Failed probes and requests of the worker.",
               [](const WorkerStatus& w) { return w.num_failures; });
    per_worker("lmrun:router_prefix_tree_bytes", "gauge",
               "Prompt bytes the router believes the worker caches.",
               [](const WorkerStatus& w) { return w.tree_bytes; });
    family(out, "lmrun:router_policy", "gauge", "The routing policy (label), always 1.");
    out += fmt::format("lmrun:router_policy{{policy=\"{}\"}} 1\n", policy_kind_name(options_.policy.kind));
    family(out, "lmrun:router_decisions_total", "counter", "Routing decisions by reason.");
    for (const auto& [reason, count] : decisions_)
        out += fmt::format("lmrun:router_decisions_total{{reason=\"{}\"}} {}\n", route_reason_name(reason),
                           count);
    family(out, "lmrun:router_retries_total", "counter", "Requests sent again to another worker.");
    out += fmt::format("lmrun:router_retries_total {}\n", num_retries_);
    family(out, "lmrun:router_stream_errors_total", "counter",
           "Streams ended with an error event because their worker failed.");
    out += fmt::format("lmrun:router_stream_errors_total {}\n", num_stream_errors_);
    family(out, "lmrun:router_prompt_bytes_total", "counter", "Prompt bytes routed.");
    out += fmt::format("lmrun:router_prompt_bytes_total {}\n", prompt_bytes_total_);
    family(out, "lmrun:router_prefix_match_bytes_total", "counter",
           "Of those, the bytes the chosen worker already had (PrefixTree's estimate).");
    out += fmt::format("lmrun:router_prefix_match_bytes_total {}\n", matched_bytes_total_);
    family(out, "lmrun:router_cache_hit_rate_estimate", "gauge",
           "prefix_match_bytes / prompt_bytes: the prefix-cache hit rate the router expects.");
    out += fmt::format(
        "lmrun:router_cache_hit_rate_estimate {}\n",
        prompt_bytes_total_ > 0 ? double(matched_bytes_total_) / double(prompt_bytes_total_) : 0.0);
    family(out, "lmrun:router_http_responses_total", "counter", "Router responses by status.");
    for (const auto& [status, count] : responses_)
        out += fmt::format("lmrun:router_http_responses_total{{status=\"{}\"}} {}\n", status, count);
    return out;
}

}  // namespace lmrun::router
