#include "model/rms_norm.h"

#include "kernels/norm.h"
#include "model/weight_loader.h"

namespace lmrun {

RMSNorm::RMSNorm(int64_t dim, double eps) : dim_(dim), eps_(float(eps)) {
    weight_ = Tensor::zeros(DType::F32, {dim});
}

Status RMSNorm::load_weight(const TensorInfo& src) {
    return load_replicated(src, weight_);
}

void RMSNorm::forward(const float* x, int64_t num_rows, float* y) const {
    kernels::rms_norm(x, weight_.data<float>(), eps_, num_rows, dim_, y);
}

void RMSNorm::forward_add(float* x, float* residual, int64_t num_rows) const {
    kernels::add_rms_norm(x, residual, weight_.data<float>(), eps_, num_rows, dim_);
}

}  // namespace lmrun
