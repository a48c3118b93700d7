// The mpi backend (vLLM's external-launcher case): mpirun / srun started every rank with the
// same command; this is rank 0, which runs the engine (and the server or CLI) while the other
// ranks serve it from run_worker_if_requested(). One MPI process group for the job; each
// executor sends its config, the ranks load their shards, and at the end rank 0 shuts the
// workers' step loop down (they wait for the next engine, or the end of the job).
#pragma once

#include "parallel/executor.h"
#include "parallel/mpi_process_group.h"

namespace lmrun::parallel {

class MpiExecutor final : public Executor {
  public:
    static Result<std::unique_ptr<Executor>> create(const ExecutorConfig& config);
    ~MpiExecutor() override;

  private:
    MpiExecutor() = default;
};

}  // namespace lmrun::parallel
