#include "parallel/futex.h"

#include <immintrin.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace lmrun::parallel {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "futex words are plain 32-bit integers");

uint32_t* address_of(std::atomic<uint32_t>& word) {
    return reinterpret_cast<uint32_t*>(&word);
}

}  // namespace

// Not FUTEX_PRIVATE: the word lives in memory shared between processes.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns) {
    timespec timeout{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
    syscall(SYS_futex, address_of(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
    syscall(SYS_futex, address_of(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

void WakeWord::notify() {
    word.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_all(word);
}

bool WaitContext::should_give_up() const {
    return aborted_now() || (parent_pid != 0 && getppid() != parent_pid);
}

int64_t monotonic_ns() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

void cpu_relax() {
    _mm_pause();
}

}  // namespace lmrun::parallel
