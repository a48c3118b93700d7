// ReplicaPlan: how `lmrun serve --data-parallel-size N` divides one machine among N
// replicas: each gets a contiguous share of the CPUs this process may run on (pinned: its
// compute threads never migrate onto a sibling's cores), threads = its CPUs, and 1/N of
// the KV budget; and its command line is the parent's own serve arguments with the
// options that differ per replica (listening address, threads, KV budget, the
// data-parallel options themselves) replaced. Pure functions, so the split is testable.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace lmrun::router {

// `cpus` split into `n` contiguous, disjoint, non-empty shares, as even as possible;
// with fewer CPUs than replicas, replicas share CPUs round robin (one each).
std::vector<std::vector<int>> split_cpus(const std::vector<int>& cpus, int n);

struct ReplicaShare {
    int port = 0;                    // on 127.0.0.1; 0 = any free port
    int num_threads = 1;             // its compute threads (= its CPUs)
    double kv_cache_memory_gib = 0;  // > 0: this budget
    double kv_cache_fraction = 0;    // else > 0: this fraction of available RAM
};

// The options a replica's command line must not inherit from the parent's: they are
// replaced (or, for the data-parallel ones, dropped).
extern const std::vector<std::string> kReplicaOwnOptions;

// `serve_args` (the parent's arguments after "serve", as typed: "--opt value" or
// "--opt=value") without kReplicaOwnOptions, then the replica's own.
Result<std::vector<std::string>> replica_arguments(const std::vector<std::string>& serve_args,
                                                   const ReplicaShare& share);

}  // namespace lmrun::router
