// RMSNorm layer (HF semantics, F32 weight), plain or fused with the residual add.
#pragma once

#include "core/result.h"
#include "core/tensor.h"
#include "model/safetensors.h"

namespace lmrun {

class RMSNorm {
  public:
    RMSNorm(int64_t dim, double eps);
    Status load_weight(const TensorInfo& src);
    // y = norm(x)
    void forward(const float* x, int64_t num_rows, float* y) const;
    // residual += x; x = norm(residual)
    void forward_add(float* x, float* residual, int64_t num_rows) const;
    int64_t dim() const { return dim_; }
    const float* weight() const { return weight_.data<float>(); }
    float eps() const { return eps_; }

  private:
    int64_t dim_;
    float eps_;
    Tensor weight_;  // F32 [dim]
};

}  // namespace lmrun
