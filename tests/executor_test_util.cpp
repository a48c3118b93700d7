#include "executor_test_util.h"

#include <stdexcept>

#include "parallel/mpi_runtime.h"
#include "test_util.h"

namespace lmrun::testing {

std::vector<Launch> tensor_parallel_launches() {
    if (parallel::launched_by_mpi()) return {{parallel::ExecutorBackend::Mpi, parallel::mpi_launch_size()}};
    return {{parallel::ExecutorBackend::Mp, 2}, {parallel::ExecutorBackend::Mp, 4}};
}

std::string launch_name(const Launch& launch) {
    return std::string(parallel::executor_backend_name(launch.backend)) +
           std::to_string(launch.tensor_parallel_size);
}

std::unique_ptr<parallel::Executor> make_executor(const std::string& model, DType dtype,
                                                  const ModelRunnerConfig& config, const Launch& launch,
                                                  const WeightQuantization& quantization) {
    parallel::ExecutorConfig executor_config;
    executor_config.model_dir = model.empty() || model[0] == '/' ? model : testdata_path(model);
    executor_config.dtype = dtype;
    executor_config.quantization = quantization;
    executor_config.runner = config;
    executor_config.tensor_parallel_size = launch.tensor_parallel_size;
    executor_config.backend =
        launch.tensor_parallel_size == 1 ? parallel::ExecutorBackend::Uni : launch.backend;
    auto executor = parallel::Executor::create(executor_config);
    if (!executor.ok()) throw std::runtime_error(executor.error().message);
    return std::move(executor).value();
}

}  // namespace lmrun::testing
