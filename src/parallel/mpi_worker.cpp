#include "parallel/mpi_worker.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/logging.h"
#include "core/parallel.h"
#include "parallel/mpi_process_group.h"
#include "parallel/mpi_runtime.h"
#include "parallel/rank_startup.h"
#include "parallel/step_message.h"

namespace lmrun::parallel {
namespace {

// The CPUs mpirun / srun bound this rank to; if it left the rank the whole machine, this
// rank's share of it among the machine's ranks.
RankPlacement mpi_rank_placement(const MpiWorld& world) {
    const std::vector<int> allowed = current_cpus();
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    RankPlacement placement;
    if (long(allowed.size()) >= online && world.local_size > 1) {
        placement = plan_placement(world.local_size, 0)[size_t(world.local_rank)];
    } else {
        placement.cpus = allowed;
        placement.num_threads = int(allowed.size());
    }
    placement.rank = world.rank;
    return placement;
}

RankPlacement& this_rank_placement() {
    static RankPlacement placement;
    return placement;
}

bool is_exit(std::span<const std::byte> message) {
    const std::span<const std::byte> exit = mpi_exit_message();
    return message.size() == exit.size() && std::memcmp(message.data(), exit.data(), exit.size()) == 0;
}

// Serves one engine of rank 0: start-up, then steps until rank 0 shuts it down.
void serve_engine(MpiProcessGroup& group, std::span<const std::byte> config_message) {
    auto config = worker_config_from_json(
        std::string_view(reinterpret_cast<const char*>(config_message.data()), config_message.size()));
    if (!config.ok()) {
        log_error("{}", config.error().message);
        std::abort();  // out of step with rank 0: the launcher ends the job
    }
    if (config->threads_per_rank > 0) configure_threads(config->threads_per_rank);
    const ModelRunnerConfig& runner = config->runner;
    const int64_t max_tokens = std::max(runner.max_num_batched_tokens, runner.max_num_seqs);
    group.reserve_message_bytes(max_step_message_bytes(
        max_tokens, runner.max_num_seqs, (runner.max_model_len + runner.block_size - 1) / runner.block_size));
    gather_rank_descriptions(group);
    auto rank_runner = start_rank(group, config.value());
    if (!rank_runner.ok()) return;  // rank 0 reports it
    while (rank_runner.value()->run_worker_step()) {
    }
}

}  // namespace

std::vector<std::string> gather_rank_descriptions(MpiProcessGroup& group) {
    char mine[256] = {};
    char host[64] = {};
    gethostname(host, sizeof(host) - 1);
    std::snprintf(mine, sizeof(mine), "%s, pid %d, host %s", describe(this_rank_placement()).c_str(),
                  int(getpid()), host);
    std::vector<char> all(sizeof(mine) * size_t(group.size()));
    group.gather(mine, sizeof(mine), all.data());
    std::vector<std::string> descriptions;
    if (group.rank() != 0 || group.failed()) return descriptions;
    for (int r = 0; r < group.size(); ++r) descriptions.emplace_back(all.data() + size_t(r) * sizeof(mine));
    return descriptions;
}

std::optional<int> run_mpi_worker_if_launched() {
    if (!launched_by_mpi()) return std::nullopt;
    auto world = init_mpi();
    if (!world.ok()) {
        log_error("{}", world.error().message);
        return 1;
    }
    this_rank_placement() = mpi_rank_placement(world.value());
    (void)apply_placement(this_rank_placement());
    MpiProcessGroup& group = mpi_world_group();
    if (world->rank == 0) {
        std::atexit(finish_mpi_job);
        return std::nullopt;
    }
    set_log_tag("rank " + std::to_string(world->rank));
    if (!std::getenv("LMRUN_LOG_LEVEL")) set_log_level(LogLevel::Warn);
    for (;;) {
        std::span<const std::byte> message = group.broadcast({});
        if (group.failed() || is_exit(message)) break;
        serve_engine(group, message);
        if (group.failed()) break;
    }
    const int code = group.failed() ? 1 : 0;
    MPI_Finalize();
    return code;
}

}  // namespace lmrun::parallel
