// The Executor: the seam between the engine and the ranks that run the model, as vLLM's.
// LLMEngine hands it each scheduled step (execute_model); the executor runs it on every
// rank and returns what rank 0 sampled. Backends (--distributed-executor-backend):
//   uni  one process, today's path (tensor_parallel_size 1);
//   mp   rank 0 here, ranks 1..N-1 worker processes of this executable on this machine,
//        driven over shared memory (multiproc_executor.h);
//   mpi  every rank started by mpirun / srun; rank 0 runs the engine, the others the worker
//        loop (mpi_executor.h).
// Every rank holds a ModelRunner over its shard; rank 0's is reachable here for tests and
// benchmarks (run() on it runs the step on every rank too).
//
// Faults: when a rank dies the executor fails for good: execute_model() and health()
// return an Unavailable error naming the rank, and a step in flight returns that error.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "engine/model_runner.h"
#include "model/packed_cache_directory.h"
#include "model/quantization_config.h"
#include "parallel/placement.h"

namespace lmrun::parallel {

enum class ExecutorBackend { Uni, Mp, Mpi };

// "uni", "mp", "mpi", or "" (uni for tensor_parallel_size 1; else mpi when mpirun / srun
// launched this process as one of several ranks, else mp).
Result<ExecutorBackend> resolve_executor_backend(const std::string& name, int tensor_parallel_size);
const char* executor_backend_name(ExecutorBackend backend);

struct ExecutorConfig {
    std::string model_dir;
    DType dtype = DType::BF16;
    WeightQuantization quantization;
    PackedCacheOptions packed_cache;  // dir "": none (CausalLM::load)
    ModelRunnerConfig runner;
    int tensor_parallel_size = 1;
    ExecutorBackend backend = ExecutorBackend::Uni;
    int threads_per_rank = 0;                          // 0: the rank's CPUs
    std::string worker_executable = "/proc/self/exe";  // mp: started as `EXECUTABLE worker ...`
};

class Executor {
  public:
    // Starts every rank, loads the weights (each rank its shard) and builds the runners.
    static Result<std::unique_ptr<Executor>> create(const ExecutorConfig& config);
    virtual ~Executor();

    // Runs one step on every rank; the results of the sampling sequences, in order (valid
    // until the next call). An Unavailable error once any rank failed.
    Result<std::span<const SampleResult>> execute_model(std::span<const RunnerSequence> seqs);
    // ok, or why the ranks can no longer run steps.
    Status health() const;

    ModelRunner& runner() { return *runner_; }
    const ModelRunner& runner() const { return *runner_; }
    int tensor_parallel_size() const { return runner_->group().size(); }
    // Seconds rank 0 spent loading its weights (the rest of create() starts ranks and runners).
    double load_seconds() const { return load_seconds_; }
    const std::vector<RankPlacement>& placements() const { return placements_; }
    // Worker processes by rank - 1 (mp backend); empty otherwise.
    virtual std::vector<pid_t> worker_pids() const { return {}; }
    // Tells the other ranks to stop and waits for them (the destructor does it if not done):
    // ok when every worker process exited by itself, with status 0. No steps after it.
    virtual Status shutdown() { return ok_status(); }

  protected:
    Executor() = default;
    // Records why the group failed (the first reason wins). Thread-safe.
    void record_failure(const std::string& reason);
    Error failure_error() const;

    std::unique_ptr<ModelRunner> runner_;
    std::vector<RankPlacement> placements_;
    double load_seconds_ = 0;

  private:
    mutable std::mutex failure_mutex_;
    std::string failure_;
};

}  // namespace lmrun::parallel
