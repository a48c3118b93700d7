// Monotonic wall-clock timing for benchmarks, metrics and progress output, and
// CPU time (of the calling thread, or of the whole process) for benchmarks on a
// shared machine, where wall time also counts the time other processes ran.
#pragma once

#include <time.h>

#include <chrono>

namespace lmrun {

inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double thread_cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

inline double process_cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

class Stopwatch {
  public:
    Stopwatch() : start_(now_seconds()) {}
    double elapsed_seconds() const { return now_seconds() - start_; }
    void reset() { start_ = now_seconds(); }

  private:
    double start_;
};

}  // namespace lmrun
