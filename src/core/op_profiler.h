// Where a step's time goes: wall time per operation kind, summed over layers and steps.
// Off by default (one relaxed load per scope); `lmrun bench --profile` turns it on. Scopes are
// opened by the thread that drives a step (the parallel kernels run inside them), so the
// totals add up to the step's wall time. Nothing here allocates.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace lmrun {

enum class Op : int {
    Embedding,
    Norm,
    QkvProj,
    QkNormRopeStore,
    Attention,
    OProj,
    GateUpProj,
    SiluMul,
    DownProj,
    LmHead,
    Sampling,
    PrepareInputs,
    Schedule,
    OutputProcessing,
    kCount
};

std::string_view op_name(Op op);

class OpProfiler {
  public:
    static OpProfiler& instance();

    void set_enabled(bool enabled) { enabled_.store(enabled, std::memory_order_relaxed); }
    bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
    void add(Op op, int64_t nanoseconds) {
        totals_[size_t(op)].fetch_add(nanoseconds, std::memory_order_relaxed);
    }
    void reset();
    // Seconds spent in each op since the last reset().
    std::array<double, size_t(Op::kCount)> seconds() const;

  private:
    std::atomic<bool> enabled_{false};
    std::array<std::atomic<int64_t>, size_t(Op::kCount)> totals_{};
};

int64_t monotonic_nanoseconds();

// Times its scope into `op` when profiling is on.
class ScopedOp {
  public:
    explicit ScopedOp(Op op)
        : op_(op), start_(OpProfiler::instance().enabled() ? monotonic_nanoseconds() : -1) {}
    ~ScopedOp() {
        if (start_ >= 0) OpProfiler::instance().add(op_, monotonic_nanoseconds() - start_);
    }
    ScopedOp(const ScopedOp&) = delete;
    ScopedOp& operator=(const ScopedOp&) = delete;

  private:
    Op op_;
    int64_t start_;
};

}  // namespace lmrun
