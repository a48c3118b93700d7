// The group of one rank (tensor_parallel_size 1): collectives are copies or nothing.
#pragma once

#include "parallel/process_group.h"

namespace lmrun::parallel {

class SingleProcessGroup final : public ProcessGroup {
  public:
    SingleProcessGroup() : ProcessGroup(0, 1) {}
    void all_reduce(float*, int64_t) override {}
    void gather(const void* local, size_t bytes, void* out) override;
    void gather_columns(const float* local, int64_t num_rows, int64_t local_cols, float* out,
                        int64_t out_cols) override;
    std::span<const std::byte> broadcast(std::span<const std::byte> message) override { return message; }
    void barrier() override {}
    bool failed() const override { return false; }
};

// A shared instance for models and runners that are not part of a larger group.
ProcessGroup& single_process_group();

}  // namespace lmrun::parallel
