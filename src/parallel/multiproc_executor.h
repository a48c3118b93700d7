// The mp backend (vLLM's MultiprocExecutor): rank 0 in this process, ranks 1..N-1 in worker
// processes of this executable on this machine (worker_processes.h), one shared-memory
// process group between them (shm_process_group.h). Each rank is pinned to its own CPUs
// (placement.h), printed at start. A worker that dies fails the group within the watcher's
// wake-up (immediate with pidfds); rank 0 then reports the rank, its pid and how it ended.
#pragma once

#include "parallel/executor.h"
#include "parallel/shm_process_group.h"
#include "parallel/worker_processes.h"

namespace lmrun::parallel {

class MultiprocExecutor final : public Executor {
  public:
    static Result<std::unique_ptr<Executor>> create(const ExecutorConfig& config);
    // shutdown() if not done yet.
    ~MultiprocExecutor() override;
    std::vector<pid_t> worker_pids() const override;
    // Tells the workers to stop, waits for them (5 s, then kills) and unpins this thread.
    Status shutdown() override;

  private:
    MultiprocExecutor() = default;
    Status start(const ExecutorConfig& config);

    std::unique_ptr<ShmProcessGroup> group_;
    std::unique_ptr<WorkerProcesses> workers_;
    std::vector<int> saved_cpus_;
};

// Set in a worker's environment: a worker whose main() did not enter the worker loop must
// not start workers of its own.
inline constexpr const char* kWorkerEnvironmentVariable = "LMRUN_TP_WORKER";

}  // namespace lmrun::parallel
