// Internal to the linear kernels: oneDNN matmul over the packed weight (many rows, prefill).
// The packed tiles are oneDNN's own blocked weight layouts (linear_gemv.h), so oneDNN reads
// them in place. Primitives are cached per (num_rows, has_bias); a call holds the cache's
// mutex, since the cached memory objects are re-pointed at each call's buffers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "kernels/linear.h"
#include "kernels/linear_gemv.h"

namespace lmrun::kernels {

class OnednnLinear {
  public:
    OnednnLinear();
    ~OnednnLinear();
    OnednnLinear(const OnednnLinear&) = delete;
    OnednnLinear& operator=(const OnednnLinear&) = delete;

    // y = x · Wᵀ + bias. BF16 weights multiply x rounded to BF16 (F32 accumulation).
    // Returns false, computing nothing, if oneDNN only has its slow reference
    // implementation for this case (the caller then uses the GEMV driver).
    bool run(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y);

  private:
    struct Entry;
    Entry& entry(int64_t num_rows, bool has_bias, const PackedLinear& w);

    std::mutex mutex_;
    std::map<std::pair<int64_t, bool>, std::unique_ptr<Entry>> entries_;
};

// The oneDNN path of linear() for `weight`, whatever num_rows (tests and benchmarks call it
// directly); false if oneDNN has no fast implementation (nothing computed).
bool linear_onednn(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias, float* y);

}  // namespace lmrun::kernels
