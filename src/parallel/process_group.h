// The ranks of a tensor-parallel group and what the model and the ModelRunner need between
// them: an in-place all-reduce (sum) of F32 rows after each row-parallel layer, a gather of
// the vocab-parallel logits to rank 0, a broadcast of each step's inputs from rank 0 (plain
// bytes, see step_message.h) and a barrier. Implementations: one process (no communication),
// shared memory between processes of one machine (shm_process_group.h) and MPI
// (mpi_process_group.h).
//
// Every rank calls the same collectives in the same order. A group fails when a rank dies or
// the group is shut down; from then on every collective returns at once without
// communicating (so a forward pass in progress runs to its end on stale data), and failed()
// tells the caller to discard the step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace lmrun::parallel {

class ProcessGroup {
  public:
    ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
    virtual ~ProcessGroup() = default;
    ProcessGroup(const ProcessGroup&) = delete;
    ProcessGroup& operator=(const ProcessGroup&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }

    // data[count] = the sum over ranks of their data[count]; bit-identical on every rank.
    virtual void all_reduce(float* data, int64_t count) = 0;
    // Rank 0: out = every rank's `bytes` bytes of `local`, rank-major ([size][bytes]).
    virtual void gather(const void* local, size_t bytes, void* out) = 0;
    // Rank 0: out[row, r * local_cols + c] = rank r's local[row, c], for columns < out_cols
    // (vocab-parallel logits; a padded vocab's extra columns are dropped).
    virtual void gather_columns(const float* local, int64_t num_rows, int64_t local_cols, float* out,
                                int64_t out_cols) = 0;
    // Rank 0 passes the message, the other ranks an empty span; every rank gets the message
    // back, valid until its next broadcast(). Empty once the group failed.
    virtual std::span<const std::byte> broadcast(std::span<const std::byte> message) = 0;
    virtual void barrier() = 0;
    // A rank died or the group shut down: results since then are not to be used.
    virtual bool failed() const = 0;

  private:
    int rank_;
    int size_;
};

}  // namespace lmrun::parallel
