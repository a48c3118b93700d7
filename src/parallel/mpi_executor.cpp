#include "parallel/mpi_executor.h"

#include "core/logging.h"
#include "core/parallel.h"
#include "model/tensor_parallel_shapes.h"
#include "parallel/mpi_runtime.h"
#include "parallel/mpi_worker.h"
#include "parallel/rank_startup.h"

namespace lmrun::parallel {

Result<std::unique_ptr<Executor>> MpiExecutor::create(const ExecutorConfig& config) {
    auto unavailable = [](Error error) {
        return with_subject(std::move(error), "distributed_executor_backend");
    };
    if (!launched_by_mpi())
        return unavailable(
            make_error("the mpi backend runs under mpirun or srun: mpirun -np {} lmrun ... "
                       "--distributed-executor-backend mpi",
                       config.tensor_parallel_size));
    LMRUN_ASSIGN_OR_RETURN(MpiWorld world, init_mpi());
    if (world.rank != 0)
        return make_error(ErrorKind::Internal,
                          "MPI rank {} should be serving rank 0 (run_worker_if_requested)", world.rank);
    if (world.size != config.tensor_parallel_size)
        return with_subject(make_error("tensor_parallel_size {} must equal the number of MPI ranks ({})",
                                       config.tensor_parallel_size, world.size),
                            "tensor_parallel_size");
    LMRUN_ASSIGN_OR_RETURN(ModelConfig model_config, load_model_config(config.model_dir));
    LMRUN_RETURN_IF_ERROR(check_tensor_parallel_shapes(model_config, world.size));
    LMRUN_ASSIGN_OR_RETURN(WorkerConfig worker_config,
                           worker_config_for(config, model_config, world.local_size));
    worker_config.threads_per_rank = config.threads_per_rank;
    if (config.threads_per_rank > 0) configure_threads(config.threads_per_rank);

    MpiProcessGroup& group = mpi_world_group();
    const std::string config_json = to_json(worker_config);
    group.broadcast(std::as_bytes(std::span(config_json.data(), config_json.size())));
    std::vector<std::string> ranks = gather_rank_descriptions(group);
    log_info("tensor parallel: {} ranks, mpi backend", world.size);
    for (const std::string& description : ranks) log_info("  {}", description);
    std::unique_ptr<MpiExecutor> executor(new MpiExecutor());
    LMRUN_ASSIGN_OR_RETURN(executor->runner_, start_rank(group, worker_config, &executor->load_seconds_));
    return std::unique_ptr<Executor>(std::move(executor));
}

MpiExecutor::~MpiExecutor() {
    if (runner_) runner_->shutdown_workers();
}

}  // namespace lmrun::parallel
