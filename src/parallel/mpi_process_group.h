// The ranks of an MPI job as a ProcessGroup (the mpi backend): MPI_Allreduce for the
// all-reduce, MPI_Gather for the logits, and for each broadcast a small header (its size)
// then the payload with MPI_Bcast. A worker waiting for rank 0's next step polls a
// non-blocking broadcast, spinning briefly and then sleeping between polls (up to 1 ms), so
// that idle workers do not burn a core the way a blocking MPI call would. MPI errors are
// returned, not fatal: they fail the group. A rank that dies ends the job through the
// launcher (mpirun / srun abort the other ranks).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "parallel/mpi_runtime.h"
#include "parallel/process_group.h"

namespace lmrun::parallel {

class MpiProcessGroup final : public ProcessGroup {
  public:
    explicit MpiProcessGroup(const MpiWorld& world);
    ~MpiProcessGroup() override;

    const MpiWorld& world() const { return world_; }
    // Grows the receive buffer once to the largest message to come (no allocation in steps).
    void reserve_message_bytes(size_t bytes);

    void all_reduce(float* data, int64_t count) override;
    void gather(const void* local, size_t bytes, void* out) override;
    void gather_columns(const float* local, int64_t num_rows, int64_t local_cols, float* out,
                        int64_t out_cols) override;
    std::span<const std::byte> broadcast(std::span<const std::byte> message) override;
    void barrier() override;
    bool failed() const override { return failed_.load(); }

  private:
    bool check(int mpi_result);
    bool wait_polling(MPI_Request& request);

    MpiWorld world_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    std::unique_ptr<std::byte, decltype(&std::free)> buffer_{nullptr, &std::free};  // 64-byte aligned
    size_t buffer_bytes_ = 0;
    std::vector<float> staging_;
    std::atomic<bool> failed_{false};
};

// The world's group, created collectively the first time any rank asks (after init_mpi()).
MpiProcessGroup& mpi_world_group();
// The broadcast that ends a worker's job loop.
std::span<const std::byte> mpi_exit_message();

}  // namespace lmrun::parallel
