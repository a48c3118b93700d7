#include "parallel/multiproc_executor.h"

#include <cstdlib>

#include "core/logging.h"
#include "model/tensor_parallel_shapes.h"
#include "parallel/rank_startup.h"
#include "parallel/step_message.h"

namespace lmrun::parallel {
namespace {

// The largest broadcast (a step, or a start-up message) and the largest per-rank collective
// (an all-reduce of the hidden states of a step, or the logits gather) of this configuration.
ShmProcessGroup::Options group_options(const ModelConfig& model, const ModelRunnerConfig& runner, int size,
                                       size_t config_bytes) {
    const int64_t max_tokens = std::max(runner.max_num_batched_tokens, runner.max_num_seqs);
    const int64_t max_blocks_per_seq = (runner.max_model_len + runner.block_size - 1) / runner.block_size;
    const int64_t vocab_local = (model.vocab_size + size - 1) / size;
    ShmProcessGroup::Options options;
    options.size = size;
    options.max_message_bytes = std::max<size_t>(
        {max_step_message_bytes(max_tokens, runner.max_num_seqs, max_blocks_per_seq), config_bytes, 4096});
    options.max_collective_bytes =
        std::max<size_t>({size_t(max_tokens * model.hidden_size) * sizeof(float),
                          size_t(runner.max_num_seqs * vocab_local) * sizeof(float), 4096});
    return options;
}

}  // namespace

Result<std::unique_ptr<Executor>> MultiprocExecutor::create(const ExecutorConfig& config) {
    if (std::getenv(kWorkerEnvironmentVariable))
        return make_error(ErrorKind::Internal,
                          "this process was started as a tensor-parallel worker, but its main() did not call "
                          "lmrun::parallel::run_worker_if_requested()");
    std::unique_ptr<MultiprocExecutor> executor(new MultiprocExecutor());
    Status started = executor->start(config);
    if (!started.ok()) {
        // A worker's death explains the failure better than the wait it broke.
        if (executor->group_ && executor->group_->failed()) return executor->failure_error();
        return started.error();
    }
    return std::unique_ptr<Executor>(std::move(executor));
}

Status MultiprocExecutor::start(const ExecutorConfig& config) {
    const int size = config.tensor_parallel_size;
    LMRUN_ASSIGN_OR_RETURN(ModelConfig model_config, load_model_config(config.model_dir));
    LMRUN_RETURN_IF_ERROR(check_tensor_parallel_shapes(model_config, size));
    LMRUN_ASSIGN_OR_RETURN(WorkerConfig worker_config, worker_config_for(config, model_config, size));
    placements_ = plan_placement(size, config.threads_per_rank);
    worker_config.placements = placements_;
    const std::string config_json = to_json(worker_config);

    ShmProcessGroup::Options options =
        group_options(model_config, worker_config.runner, size, config_json.size());
    // More threads than CPUs: a spinning waiter would hold the CPU the rank it waits for needs.
    if (oversubscribed(placements_)) options.wait.spin_ns = 0;
    LMRUN_ASSIGN_OR_RETURN(group_, ShmProcessGroup::create(options));
    saved_cpus_ = current_cpus();
    LMRUN_RETURN_IF_ERROR(apply_placement(placements_[0]));

    WorkerLaunch launch{config.worker_executable, group_->fd(), size, placements_};
    auto on_failure = [this](const std::string& reason) {
        log_error("tensor parallel: {}", reason);
        record_failure(reason);
        group_->abort();
    };
    LMRUN_ASSIGN_OR_RETURN(workers_, WorkerProcesses::start(launch, on_failure));
    log_info("tensor parallel: {} ranks, mp backend{}", size,
             options.wait.spin_ns == 0 ? " (oversubscribed)" : "");
    const std::vector<pid_t> pids = workers_->pids();
    for (const RankPlacement& placement : placements_)
        log_info("  {}, pid {}", describe(placement),
                 placement.rank == 0 ? getpid() : pids[size_t(placement.rank - 1)]);

    group_->broadcast(std::as_bytes(std::span(config_json.data(), config_json.size())));
    auto runner = start_rank(*group_, worker_config, &load_seconds_);
    if (!runner.ok()) {
        // Every rank saw the same verdict; the workers wait for this message to exit.
        workers_->expect_exits();
        group_->broadcast(shutdown_message());
        return runner.error();
    }
    runner_ = std::move(runner).value();
    return ok_status();
}

MultiprocExecutor::~MultiprocExecutor() {
    if (Status stopped = shutdown(); !stopped.ok()) log_warn("{}", stopped.error().message);
}

Status MultiprocExecutor::shutdown() {
    Status stopped = ok_status();
    if (workers_) workers_->expect_exits();
    if (runner_) runner_->shutdown_workers();
    if (workers_) stopped = workers_->stop(5.0);
    if (runner_) record_failure("the executor was shut down");  // health() no longer reads the runner
    workers_.reset();
    runner_.reset();
    group_.reset();
    if (!saved_cpus_.empty()) pin_current_thread(saved_cpus_);
    saved_cpus_.clear();
    return stopped;
}

std::vector<pid_t> MultiprocExecutor::worker_pids() const {
    return workers_ ? workers_->pids() : std::vector<pid_t>{};
}

}  // namespace lmrun::parallel
