// Monotonic wall-clock timing for benchmarks, metrics and progress output.
#pragma once

#include <chrono>

namespace lmrun {

inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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
