#include "router/routing_policy.h"

#include <algorithm>

namespace lmrun::router {

Result<PolicyKind> parse_policy_kind(const std::string& name) {
    if (name == "round_robin") return PolicyKind::RoundRobin;
    if (name == "least_load") return PolicyKind::LeastLoad;
    if (name == "session") return PolicyKind::Session;
    if (name == "cache_aware") return PolicyKind::CacheAware;
    return make_error("--policy must be one of round_robin, least_load, session, cache_aware; got \"{}\"",
                      name);
}

const char* policy_kind_name(PolicyKind kind) {
    switch (kind) {
        case PolicyKind::RoundRobin:
            return "round_robin";
        case PolicyKind::LeastLoad:
            return "least_load";
        case PolicyKind::Session:
            return "session";
        case PolicyKind::CacheAware:
            return "cache_aware";
    }
    return "";
}

const char* route_reason_name(RouteReason reason) {
    switch (reason) {
        case RouteReason::RoundRobin:
            return "round_robin";
        case RouteReason::LeastLoad:
            return "least_load";
        case RouteReason::Session:
            return "session";
        case RouteReason::CacheMatch:
            return "cache_match";
    }
    return "";
}

size_t least_loaded(std::span<const WorkerView> workers, size_t rotation) {
    size_t best = rotation % workers.size();
    for (size_t step = 1; step < workers.size(); ++step) {
        const size_t i = (rotation + step) % workers.size();
        const WorkerView& a = workers[i];
        const WorkerView& b = workers[best];
        if (a.load_tokens < b.load_tokens ||
            (a.load_tokens == b.load_tokens && a.cached_bytes < b.cached_bytes))
            best = i;
    }
    return best;
}

int32_t SessionTable::find(const std::string& key) {
    auto found = index_.find(key);
    if (found == index_.end()) return -1;
    entries_.splice(entries_.begin(), entries_, found->second);
    return found->second->second;
}

void SessionTable::assign(const std::string& key, int32_t worker_id) {
    if (auto found = index_.find(key); found != index_.end()) {
        found->second->second = worker_id;
        entries_.splice(entries_.begin(), entries_, found->second);
        return;
    }
    entries_.emplace_front(key, worker_id);
    index_[key] = entries_.begin();
    if (index_.size() > capacity_) {
        index_.erase(entries_.back().first);
        entries_.pop_back();
    }
}

namespace {

class RoundRobinPolicy final : public RoutingPolicy {
  public:
    RoutingDecision choose(const RoutingRequest&, std::span<const WorkerView> workers) override {
        return {workers[next_++ % workers.size()].id, RouteReason::RoundRobin};
    }

  private:
    size_t next_ = 0;
};

class LeastLoadPolicy final : public RoutingPolicy {
  public:
    RoutingDecision choose(const RoutingRequest&, std::span<const WorkerView> workers) override {
        return {workers[least_loaded(workers, rotation_++)].id, RouteReason::LeastLoad};
    }

  private:
    size_t rotation_ = 0;
};

class SessionPolicy final : public RoutingPolicy {
  public:
    explicit SessionPolicy(size_t max_sessions) : sessions_(max_sessions) {}

    RoutingDecision choose(const RoutingRequest& request, std::span<const WorkerView> workers) override {
        if (!request.session_key.empty()) {
            const int32_t remembered = sessions_.find(request.session_key);
            for (const WorkerView& worker : workers)
                if (worker.id == remembered) return {worker.id, RouteReason::Session};
        }
        const int32_t chosen = workers[least_loaded(workers, rotation_++)].id;
        if (!request.session_key.empty()) sessions_.assign(request.session_key, chosen);
        return {chosen, RouteReason::LeastLoad};
    }

  private:
    SessionTable sessions_;
    size_t rotation_ = 0;
};

class CacheAwarePolicy final : public RoutingPolicy {
  public:
    explicit CacheAwarePolicy(const PolicyOptions& options) : options_(options) {}

    RoutingDecision choose(const RoutingRequest& request, std::span<const WorkerView> workers) override {
        const size_t lightest = least_loaded(workers, rotation_++);
        size_t best = 0;
        for (size_t i = 1; i < workers.size(); ++i) {
            const WorkerView& a = workers[i];
            const WorkerView& b = workers[best];
            if (a.matched_bytes > b.matched_bytes ||
                (a.matched_bytes == b.matched_bytes && a.load_tokens < b.load_tokens))
                best = i;
        }
        const WorkerView& match = workers[best];
        const double fraction =
            request.prompt_bytes > 0 ? double(match.matched_bytes) / double(request.prompt_bytes) : 0.0;
        if (match.matched_bytes > 0 && fraction >= options_.cache_threshold &&
            !overloaded(match, workers[lightest]))
            return {match.id, RouteReason::CacheMatch};
        return {workers[lightest].id, RouteReason::LeastLoad};
    }

  private:
    bool overloaded(const WorkerView& worker, const WorkerView& lightest) const {
        const int64_t excess = worker.load_tokens - lightest.load_tokens;
        return excess > options_.balance_abs_tokens &&
               double(worker.load_tokens) > options_.balance_rel * double(lightest.load_tokens);
    }

    PolicyOptions options_;
    size_t rotation_ = 0;
};

}  // namespace

std::unique_ptr<RoutingPolicy> make_routing_policy(const PolicyOptions& options) {
    switch (options.kind) {
        case PolicyKind::RoundRobin:
            return std::make_unique<RoundRobinPolicy>();
        case PolicyKind::LeastLoad:
            return std::make_unique<LeastLoadPolicy>();
        case PolicyKind::Session:
            return std::make_unique<SessionPolicy>(options.max_sessions);
        case PolicyKind::CacheAware:
            return std::make_unique<CacheAwarePolicy>(options);
    }
    return nullptr;
}

}  // namespace lmrun::router
