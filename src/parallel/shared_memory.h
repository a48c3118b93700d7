// A segment of memory shared by the ranks on this machine: an anonymous memfd that rank 0
// creates and its worker processes inherit as a file descriptor (nothing is left behind in
// /dev/shm if a process dies). Pages are allocated on first touch, so the segment's size is
// a bound, not a cost.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.h"

namespace lmrun::parallel {

// Regions inside a segment start on their own 4 KiB page (no false sharing between them, and
// each can be touched by the rank that uses it first).
constexpr size_t round_up_to_page(size_t bytes) {
    return (bytes + 4095) / 4096 * 4096;
}

class SharedMemory {
  public:
    // A new zero-filled segment of `bytes` bytes. The descriptor is close-on-exec: a process
    // started to be a rank clears that flag on its copy (worker_processes.cpp).
    static Result<SharedMemory> create(const std::string& name, size_t bytes);
    // Maps the segment behind an inherited descriptor (whole size).
    static Result<SharedMemory> attach(int fd);

    SharedMemory() = default;
    SharedMemory(SharedMemory&& other) noexcept;
    SharedMemory& operator=(SharedMemory&& other) noexcept;
    SharedMemory(const SharedMemory&) = delete;
    SharedMemory& operator=(const SharedMemory&) = delete;
    ~SharedMemory();

    std::byte* data() const { return data_; }
    size_t size() const { return size_; }
    int fd() const { return fd_; }

  private:
    std::byte* data_ = nullptr;
    size_t size_ = 0;
    int fd_ = -1;
};

}  // namespace lmrun::parallel
