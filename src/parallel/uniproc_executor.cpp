#include "parallel/uniproc_executor.h"

#include "core/parallel.h"
#include "parallel/rank_startup.h"

namespace lmrun::parallel {

Result<std::unique_ptr<Executor>> UniProcExecutor::create(const ExecutorConfig& config) {
    configure_threads(config.threads_per_rank);
    std::unique_ptr<UniProcExecutor> executor(new UniProcExecutor());
    LMRUN_ASSIGN_OR_RETURN(std::unique_ptr<CausalLM> model,
                           load_rank_model(config.model_dir, config.dtype, config.quantization, {},
                                           &executor->load_seconds_, config.packed_cache));
    LMRUN_ASSIGN_OR_RETURN(executor->runner_, ModelRunner::create(std::move(model), config.runner));
    return std::unique_ptr<Executor>(std::move(executor));
}

}  // namespace lmrun::parallel
