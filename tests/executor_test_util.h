// Shared by the tensor-parallel tests: which launches this run of the test binary covers
// (normally the mp backend at 2 and 4 ranks; under `mpirun -np N` the mpi backend at N ranks,
// the other ranks serving from the test binary's main), and executors built for them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "parallel/executor.h"

namespace lmrun::testing {

struct Launch {
    parallel::ExecutorBackend backend = parallel::ExecutorBackend::Mp;
    int tensor_parallel_size = 2;
};

std::vector<Launch> tensor_parallel_launches();
// "mp2", "mpi4": a GoogleTest parameter name.
std::string launch_name(const Launch& launch);

// An executor over ../shared/testdata/MODEL (or an absolute folder); throws on failure.
// tensor_parallel_size 1 gives the single-process (uni) executor.
std::unique_ptr<parallel::Executor> make_executor(const std::string& model, DType dtype,
                                                  const ModelRunnerConfig& config, const Launch& launch,
                                                  const WeightQuantization& quantization = {});

}  // namespace lmrun::testing
