#include "parallel/placement.h"

#include <numa.h>
#include <sched.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/parallel.h"

namespace lmrun::parallel {
namespace {

bool numa_usable() {
    static const bool usable = numa_available() >= 0 && numa_num_configured_nodes() > 1;
    return usable;
}

// The allowed CPUs grouped by NUMA node (one group, node -1, when there is one node).
std::vector<NumaNodeCpus> cpus_by_node(const std::vector<int>& cpus) {
    std::map<int, std::vector<int>> groups;
    for (int cpu : cpus) groups[numa_usable() ? std::max(0, numa_node_of_cpu(cpu)) : -1].push_back(cpu);
    std::vector<NumaNodeCpus> nodes;
    nodes.reserve(groups.size());
    for (auto& [node, members] : groups) nodes.push_back({node, std::move(members)});
    return nodes;
}

}  // namespace

std::vector<int> current_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return {0};
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    return cpus;
}

void pin_current_thread(const std::vector<int>& cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);  // a CPU that vanished leaves the old mask: harmless
}

std::vector<RankPlacement> plan_placement(int num_ranks, int threads_per_rank) {
    return plan_placement_on(cpus_by_node(current_cpus()), num_ranks, threads_per_rank);
}

std::vector<RankPlacement> plan_placement_on(const std::vector<NumaNodeCpus>& nodes, int num_ranks,
                                             int threads_per_rank) {
    const int num_nodes = int(nodes.size());
    std::vector<RankPlacement> placements(static_cast<size_t>(num_ranks));
    for (int node = 0; node < num_nodes; ++node) {
        // The ranks on this node: r * num_nodes / num_ranks == node.
        std::vector<int> ranks;
        for (int r = 0; r < num_ranks; ++r)
            if (int64_t(r) * num_nodes / num_ranks == node) ranks.push_back(r);
        const std::vector<int>& cpus = nodes[size_t(node)].cpus;
        const int k = int(ranks.size());
        const int c = int(cpus.size());
        for (int j = 0; j < k; ++j) {
            RankPlacement& placement = placements[size_t(ranks[size_t(j)])];
            placement.rank = ranks[size_t(j)];
            placement.numa_node = nodes[size_t(node)].node;
            if (c >= k) {
                placement.cpus.assign(cpus.begin() + int64_t(j) * c / k,
                                      cpus.begin() + int64_t(j + 1) * c / k);
            } else {
                placement.cpus = {cpus[size_t(j % c)]};
            }
            placement.num_threads = threads_per_rank > 0 ? threads_per_rank : int(placement.cpus.size());
        }
    }
    return placements;
}

bool oversubscribed(const std::vector<RankPlacement>& placements) {
    int threads = 0;
    std::vector<int> cpus;
    for (const RankPlacement& placement : placements) {
        threads += placement.num_threads;
        cpus.insert(cpus.end(), placement.cpus.begin(), placement.cpus.end());
    }
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return threads > int(cpus.size());
}

Status apply_placement(const RankPlacement& placement) {
    pin_current_thread(placement.cpus);
    if (placement.numa_node >= 0 && numa_usable()) {
        bitmask* nodes = numa_allocate_nodemask();
        numa_bitmask_setbit(nodes, unsigned(placement.numa_node));
        numa_set_membind(nodes);
        numa_bitmask_free(nodes);
    }
    configure_threads(placement.num_threads);
    return ok_status();
}

std::string format_cpu_list(const std::vector<int>& cpus) {
    std::string text;
    for (size_t i = 0; i < cpus.size();) {
        size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
        if (!text.empty()) text += ",";
        text += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
        i = j + 1;
    }
    return text;
}

std::string describe(const RankPlacement& placement) {
    std::string text = fmt::format("rank {}: cpu{} {} ({} thread{})", placement.rank,
                                   placement.cpus.size() == 1 ? "" : "s", format_cpu_list(placement.cpus),
                                   placement.num_threads, placement.num_threads == 1 ? "" : "s");
    if (placement.numa_node >= 0) text += fmt::format(", NUMA node {}", placement.numa_node);
    return text;
}

}  // namespace lmrun::parallel
