// The uni backend: the whole model in this process (tensor_parallel_size 1), as before
// executors existed.
#pragma once

#include "parallel/executor.h"

namespace lmrun::parallel {

class UniProcExecutor final : public Executor {
  public:
    static Result<std::unique_ptr<Executor>> create(const ExecutorConfig& config);

  private:
    UniProcExecutor() = default;
};

}  // namespace lmrun::parallel
