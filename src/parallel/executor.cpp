#include "parallel/executor.h"

#include "parallel/mpi_executor.h"
#include "parallel/mpi_runtime.h"
#include "parallel/multiproc_executor.h"
#include "parallel/uniproc_executor.h"

namespace lmrun::parallel {

Result<ExecutorBackend> resolve_executor_backend(const std::string& name, int tensor_parallel_size) {
    auto invalid = [](Error error) { return with_subject(std::move(error), "distributed_executor_backend"); };
    if (tensor_parallel_size < 1)
        return with_subject(
            make_error("tensor_parallel_size must be at least 1, got {}", tensor_parallel_size),
            "tensor_parallel_size");
    if (name.empty()) {
        if (tensor_parallel_size == 1) return ExecutorBackend::Uni;
        return launched_by_mpi() ? ExecutorBackend::Mpi : ExecutorBackend::Mp;
    }
    if (name == "uni") {
        if (tensor_parallel_size > 1)
            return invalid(
                make_error("the uni backend runs one process: tensor_parallel_size {} needs mp or mpi",
                           tensor_parallel_size));
        return ExecutorBackend::Uni;
    }
    if (name == "mp") return ExecutorBackend::Mp;
    if (name == "mpi") return ExecutorBackend::Mpi;
    return invalid(make_error("distributed_executor_backend must be uni, mp or mpi; got \"{}\"", name));
}

const char* executor_backend_name(ExecutorBackend backend) {
    switch (backend) {
        case ExecutorBackend::Uni:
            return "uni";
        case ExecutorBackend::Mp:
            return "mp";
        case ExecutorBackend::Mpi:
            return "mpi";
    }
    return "";
}

Result<std::unique_ptr<Executor>> Executor::create(const ExecutorConfig& config) {
    switch (config.backend) {
        case ExecutorBackend::Uni:
            return UniProcExecutor::create(config);
        case ExecutorBackend::Mp:
            if (config.tensor_parallel_size == 1) return UniProcExecutor::create(config);
            return MultiprocExecutor::create(config);
        case ExecutorBackend::Mpi:
            return MpiExecutor::create(config);
    }
    return make_error(ErrorKind::Internal, "unknown executor backend");
}

Executor::~Executor() = default;

void Executor::record_failure(const std::string& reason) {
    std::lock_guard lock(failure_mutex_);
    if (failure_.empty()) failure_ = reason;
}

Error Executor::failure_error() const {
    std::lock_guard lock(failure_mutex_);
    return make_error(ErrorKind::Unavailable, "tensor-parallel group failed: {}",
                      failure_.empty() ? std::string("a rank stopped responding") : failure_);
}

Result<std::span<const SampleResult>> Executor::execute_model(std::span<const RunnerSequence> seqs) {
    LMRUN_RETURN_IF_ERROR(health());
    std::span<const SampleResult> results = runner_->run(seqs);
    if (runner_->group().failed()) return failure_error();
    return results;
}

Status Executor::health() const {
    {
        std::lock_guard lock(failure_mutex_);
        if (failure_.empty() && !runner_->group().failed()) return ok_status();
    }
    return failure_error();
}

}  // namespace lmrun::parallel
