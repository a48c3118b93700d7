// Where each rank of this machine runs: its own CPUs (threads per rank = CPUs / ranks by
// default, at least 1) and, on a machine with several NUMA nodes, one node whose memory it
// allocates from (libnuma), so that a rank reads its weights and KV cache from the memory
// controller next to its cores. Ranks are spread evenly over the nodes (rank r on node
// r * nodes / ranks); the CPUs of a node are split between its ranks. With more ranks than
// CPUs (oversubscription, e.g. in CI) each rank gets one CPU, shared round-robin.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace lmrun::parallel {

struct RankPlacement {
    int rank = 0;
    std::vector<int> cpus;  // the rank's threads run on these
    int num_threads = 1;
    int numa_node = -1;  // memory bound to this node; -1: one node, nothing to bind
};

// Placements of `num_ranks` ranks over the CPUs this process may use. threads_per_rank 0:
// as many as the rank has CPUs.
std::vector<RankPlacement> plan_placement(int num_ranks, int threads_per_rank);

// The CPUs of one NUMA node (node -1: the machine has one node, memory is not bound).
struct NumaNodeCpus {
    int node = -1;
    std::vector<int> cpus;
};
// plan_placement over a given topology (what the machine's libnuma reports, or a test's).
std::vector<RankPlacement> plan_placement_on(const std::vector<NumaNodeCpus>& nodes, int num_ranks,
                                             int threads_per_rank);
// More threads in all than CPUs to run them: waits should sleep at once instead of spinning.
bool oversubscribed(const std::vector<RankPlacement>& placements);

// Pins the calling thread (and the threads it starts from now on, e.g. the OpenMP team) to
// the rank's CPUs, binds its memory to the rank's node and sets the OpenMP thread count.
// Call before the rank allocates its weights.
Status apply_placement(const RankPlacement& placement);
// "rank 1: cpus 2-3 (2 threads), NUMA node 1"
std::string describe(const RankPlacement& placement);
// "0,2-3" (also the form of OMP_PLACES lists without braces).
std::string format_cpu_list(const std::vector<int>& cpus);

// The calling thread's CPU affinity, to restore it when an executor that pinned it ends.
std::vector<int> current_cpus();
void pin_current_thread(const std::vector<int>& cpus);

}  // namespace lmrun::parallel
