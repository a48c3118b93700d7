// The ranks of one machine as a ProcessGroup over one shared-memory segment (a memfd): a
// header (the group's shape, wait policy and abort flag), the ring that carries rank 0's
// broadcasts (shm_ring_buffer.h) and the collective slots (shm_collectives.h). Rank 0 creates
// the segment before it starts the workers; each worker maps the descriptor it inherited.
//
// Liveness: rank 0's watcher (worker_processes.h) calls abort() when a worker dies, which
// wakes every waiter; a worker's waits also give up when its parent (rank 0) is gone.
#pragma once

#include <sys/types.h>

#include <memory>

#include "core/result.h"
#include "parallel/futex.h"
#include "parallel/process_group.h"
#include "parallel/shared_memory.h"
#include "parallel/shm_collectives.h"
#include "parallel/shm_ring_buffer.h"

namespace lmrun::parallel {

class ShmProcessGroup final : public ProcessGroup {
  public:
    struct Options {
        int size = 2;
        size_t max_message_bytes = size_t(1) << 20;     // largest broadcast
        size_t max_collective_bytes = size_t(1) << 20;  // largest per-rank all-reduce / gather payload
        WaitPolicy wait;
    };
    // Rank 0: a new segment for `options.size` ranks.
    static Result<std::unique_ptr<ShmProcessGroup>> create(const Options& options);
    // Rank `rank` of the group whose segment is behind the inherited descriptor `fd`; its waits
    // give up when `parent_pid` (rank 0) is no longer its parent.
    static Result<std::unique_ptr<ShmProcessGroup>> attach(int fd, int rank, pid_t parent_pid);
    ~ShmProcessGroup() override;

    int fd() const { return memory_.fd(); }
    // Fails the group on every rank and wakes every waiter. Thread-safe.
    void abort();

    void all_reduce(float* data, int64_t count) override;
    void gather(const void* local, size_t bytes, void* out) override;
    void gather_columns(const float* local, int64_t num_rows, int64_t local_cols, float* out,
                        int64_t out_cols) override;
    std::span<const std::byte> broadcast(std::span<const std::byte> message) override;
    void barrier() override;
    bool failed() const override;

    const WaitPolicy& wait_policy() const { return wait_.policy; }

  private:
    struct Header;
    ShmProcessGroup(SharedMemory memory, int rank, pid_t parent_pid);
    void check(bool completed);

    SharedMemory memory_;
    Header* header_ = nullptr;
    WaitContext wait_;
    std::unique_ptr<ShmRingBuffer> ring_;
    std::unique_ptr<ShmCollectives> collectives_;
    std::atomic<bool> failed_{false};  // this rank saw a collective give up (read by health checks)
};

}  // namespace lmrun::parallel
