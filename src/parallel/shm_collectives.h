// Collectives between the ranks of one machine over shared memory, with no copy through the
// kernel: every rank owns a slot per buffer; a collective copies the rank's data into its
// slot, meets the others at a barrier and reads the other ranks' slots directly.
//
// All-reduce (sum of F32 arrays): small arrays are summed whole by every rank ("one-shot",
// one barrier); large ones with more than two ranks are split: rank r sums its 1/N slice of
// every slot (a reduce-scatter), writes the sum back into its slot, and after a second
// barrier every rank copies the other slices (an all-gather). Either way each element is
// summed in rank order 0, 1, ..., N-1 by exactly one formula, so every rank gets
// bit-identical results. Large copies and sums use the rank's OpenMP threads.
//
// Slots are double-buffered (collective k uses buffer set k % 2): a rank may start the next
// collective while another still reads this one's slots, and a third collective cannot begin
// before everybody finished the first (it waits at the second one's barrier). So a
// collective needs no barrier at its end. All calls allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "parallel/futex.h"

namespace lmrun::parallel {

class ShmCollectives {
  public:
    struct Shape {
        int num_ranks = 1;
        size_t slot_bytes = 0;  // the largest collective's per-rank payload
    };
    static size_t required_bytes(const Shape& shape);

    // region: required_bytes(shape) bytes of zero-filled shared memory, the same for every rank.
    ShmCollectives(std::byte* region, const Shape& shape, int rank, const WaitContext& wait);

    // Each returns false if the group gave up (a rank died) before the collective completed.
    bool barrier();
    // data[count] = sum over ranks of their data[count].
    bool all_reduce(float* data, int64_t count);
    // Rank 0: out = every rank's `bytes` bytes, rank-major. Others: out is not written.
    bool gather(const void* local, size_t bytes, void* out);
    // Rank 0: out[row, r * local_cols + c] = rank r's local[row, c] for the columns below
    // out_cols (a vocab-parallel LM head's padded columns are dropped).
    bool gather_columns(const float* local, int64_t num_rows, int64_t local_cols, float* out,
                        int64_t out_cols);
    void wake_all();

    size_t slot_bytes() const { return shape_.slot_bytes; }
    // Above this many bytes an all-reduce with more than 2 ranks uses the two-phase form.
    static constexpr size_t kTwoPhaseMinBytes = size_t(256) << 10;

  private:
    struct Barrier;
    std::byte* slot(int buffer_set, int rank) const;
    int next_buffer_set() { return int(num_collectives_++ & 1); }
    void reduce_in_rank_order(int buffer_set, int64_t begin, int64_t end, float* out) const;

    Shape shape_;
    size_t slot_stride_ = 0;
    Barrier* barrier_ = nullptr;
    std::byte* slots_ = nullptr;
    int rank_ = 0;
    const WaitContext& wait_;
    uint64_t num_collectives_ = 0;
};

}  // namespace lmrun::parallel
