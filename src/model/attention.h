// Self-attention of one decoder layer: packed QKV projection, optional per-head
// q/k RMSNorm (Qwen3), rotate-half RoPE, K/V written into the paged cache at
// slot_mapping, causal attention over the paged cache, output projection.
#pragma once

#include <optional>

#include "kernels/attention.h"
#include "model/activation_buffers.h"
#include "model/config.h"
#include "model/forward_context.h"
#include "model/parallel_linear.h"
#include "model/rms_norm.h"

namespace lmrun {

class Attention {
  public:
    Attention(const ModelConfig& config, DType dtype, const ParallelConfig& parallel);

    // hidden [T, hidden] in; writes the o_proj output [T, hidden] to `out`.
    void forward(const ForwardContext& context, const float* hidden, const kernels::KvCacheLayer& cache,
                 const float* rope_cos_sin, ActivationBuffers& buffers, float* out) const;
    void finalize();

    QKVParallelLinear qkv_proj;
    RowParallelLinear o_proj;
    std::optional<RMSNorm> q_norm;  // Qwen3 only
    std::optional<RMSNorm> k_norm;

  private:
    float scale_;
};

}  // namespace lmrun
