// Waiting on a 32-bit word that other processes change (shared memory): spin briefly, since
// during a step the other ranks usually answer within microseconds, then sleep in the kernel
// (futex) so an idle rank costs no CPU. Sleeps wake at least every check interval, so a waiter
// also notices that the group was aborted or that its parent (rank 0) is gone: no wait in
// src/parallel can hang on a dead process.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

namespace lmrun::parallel {

// Sleeps while *word == expected, for at most timeout_ns (or until woken). Works across processes.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns);
void futex_wake_all(std::atomic<uint32_t>& word);

struct WaitPolicy {
    int64_t spin_ns = 200'000;                // spin this long before sleeping (0: sleep at once)
    int64_t check_interval_ns = 100'000'000;  // a sleeping waiter re-checks liveness this often
};

// What a wait gives up on besides its own condition.
struct WaitContext {
    const std::atomic<uint32_t>* aborted = nullptr;  // set when a rank died or the group shuts down
    pid_t parent_pid = 0;                            // workers: rank 0's pid (0 = do not check)
    WaitPolicy policy;

    bool aborted_now() const { return aborted && aborted->load(std::memory_order_acquire) != 0; }
    // Aborted, or rank 0 (our parent) died and we were re-parented.
    bool should_give_up() const;
};

// A futex word with a count of sleepers, so that wakers skip the system call when nobody sleeps.
struct alignas(64) WakeWord {
    std::atomic<uint32_t> word{0};
    std::atomic<uint32_t> sleepers{0};

    // Call after changing the state a waiter's condition reads.
    void notify();
};

// Waits until ready() is true; false if the context gave up first. Spins for policy.spin_ns,
// then sleeps on `wake` (whose notify() the other side calls after changing the state).
template <typename Ready>
bool wait_until(WakeWord& wake, const WaitContext& context, Ready&& ready);

int64_t monotonic_ns();
void cpu_relax();

template <typename Ready>
bool wait_until(WakeWord& wake, const WaitContext& context, Ready&& ready) {
    if (ready()) return true;
    if (context.policy.spin_ns > 0) {
        const int64_t spin_end = monotonic_ns() + context.policy.spin_ns;
        for (uint32_t i = 1;; ++i) {
            if (ready()) return true;
            if (context.aborted_now()) return false;
            if ((i & 255) == 0 && monotonic_ns() > spin_end) break;
            cpu_relax();
        }
    }
    for (;;) {
        // Sleepers first, then the word, then the condition: a notify() after our check changes
        // the word, so the futex wait returns at once instead of missing it.
        wake.sleepers.fetch_add(1, std::memory_order_seq_cst);
        const uint32_t seen = wake.word.load(std::memory_order_seq_cst);
        if (ready()) {
            wake.sleepers.fetch_sub(1, std::memory_order_relaxed);
            return true;
        }
        if (context.should_give_up()) {
            wake.sleepers.fetch_sub(1, std::memory_order_relaxed);
            return false;
        }
        futex_wait(wake.word, seen, context.policy.check_interval_ns);
        wake.sleepers.fetch_sub(1, std::memory_order_relaxed);
    }
}

}  // namespace lmrun::parallel
