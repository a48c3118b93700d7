// Routing policies: which worker serves a request, chosen among the healthy workers the
// router offers (never empty). Each policy is a small state machine fed by what the router
// knows, so its decisions can be scripted in tests without any HTTP:
//
//   round_robin  workers in turn.
//   least_load   the worker with the fewest queued + running tokens (its last /load report
//                plus what the router sent it since); ties rotate, so idle workers share.
//   session      sticky: a session key (X-Session-ID header, else the request's `user`) keeps
//                its worker; a new key, or one whose worker is gone, goes to the least
//                loaded worker and stays there (a worker that comes back gets new sessions;
//                moved ones stay where their history now is). No key: least_load.
//   cache_aware  the worker holding the longest prefix of the prompt (the router's
//                PrefixTree), if that prefix is at least `cache_threshold` of the prompt and
//                the worker is not overloaded: its load exceeds the least loaded worker's by
//                more than `balance_abs_tokens` AND by more than the factor `balance_rel`.
//                Otherwise the least loaded worker, ties going to the one holding the least
//                cached text (most room), as SGLang's router does.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.h"

namespace lmrun::router {

enum class PolicyKind { RoundRobin, LeastLoad, Session, CacheAware };

Result<PolicyKind> parse_policy_kind(const std::string& name);
const char* policy_kind_name(PolicyKind kind);

// One healthy worker as the policy sees it.
struct WorkerView {
    int32_t id = 0;             // stable for the router's lifetime
    int64_t load_tokens = 0;    // queued + running tokens (reported, plus sent since the report)
    int64_t cached_bytes = 0;   // prompt bytes the PrefixTree attributes to it
    int64_t matched_bytes = 0;  // of this request's prompt, the prefix it holds (PrefixTree)
};

struct RoutingRequest {
    std::string session_key;  // "" = none
    int64_t prompt_bytes = 0;
};

// Why a worker was chosen (a metric label, and what tests check).
enum class RouteReason { RoundRobin, LeastLoad, Session, CacheMatch };
const char* route_reason_name(RouteReason reason);

struct RoutingDecision {
    int32_t worker_id = -1;
    RouteReason reason = RouteReason::LeastLoad;
};

struct PolicyOptions {
    PolicyKind kind = PolicyKind::CacheAware;
    double cache_threshold = 0.5;       // cache_aware: smallest matched fraction of the prompt that counts
    int64_t balance_abs_tokens = 4096;  // cache_aware: overload = more tokens than the least loaded by this
    double balance_rel = 1.5;           // ... and more than this factor of them
    size_t max_sessions = size_t(1) << 20;  // session: keys remembered (least recently used forgotten)
};

class RoutingPolicy {
  public:
    virtual ~RoutingPolicy() = default;
    // `workers` is not empty.
    virtual RoutingDecision choose(const RoutingRequest& request, std::span<const WorkerView> workers) = 0;
};

std::unique_ptr<RoutingPolicy> make_routing_policy(const PolicyOptions& options);

// The least loaded worker; ties go to the least cached bytes, then to the first at or after
// `rotation` (mod workers.size()) so that equal workers take turns. Returns an index into workers.
size_t least_loaded(std::span<const WorkerView> workers, size_t rotation);

// Session key -> worker, the least recently used forgotten past `capacity` keys.
class SessionTable {
  public:
    explicit SessionTable(size_t capacity) : capacity_(capacity) {}
    // The worker remembered for `key` (and the key becomes the most recently used), or -1.
    int32_t find(const std::string& key);
    void assign(const std::string& key, int32_t worker_id);
    size_t size() const { return index_.size(); }

  private:
    using Entry = std::pair<std::string, int32_t>;
    size_t capacity_;
    std::list<Entry> entries_;  // most recently used first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace lmrun::router
