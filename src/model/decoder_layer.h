// One pre-norm decoder block shared by the Llama family (Llama, Qwen2, Qwen3):
//   residual += x; x = input_layernorm(residual); x = self_attn(x)
//   residual += x; x = post_attention_layernorm(residual); x = mlp(x)
// The first layer starts the residual stream; the model's final norm closes it.
#pragma once

#include "model/attention.h"

namespace lmrun {

// SwiGLU MLP: down_proj(silu(gate_proj(x)) * up_proj(x)), gate and up packed.
class MLP {
  public:
    MLP(const ModelConfig& config, DType dtype, const ParallelConfig& parallel);
    void forward(const float* x, int64_t num_rows, LinearPath path, ActivationBuffers& buffers,
                 float* out) const;
    void finalize();

    MergedColumnParallelLinear gate_up_proj;
    RowParallelLinear down_proj;
};

class DecoderLayer {
  public:
    DecoderLayer(const ModelConfig& config, DType dtype, const ParallelConfig& parallel);
    // hidden / residual: [rows, hidden] in buffers; updated in place.
    void forward(const ForwardContext& context, bool first_layer, const kernels::KvCacheLayer& cache,
                 const float* rope_cos_sin, ActivationBuffers& buffers) const;
    void finalize();

    RMSNorm input_layernorm;
    Attention self_attn;
    RMSNorm post_attention_layernorm;
    MLP mlp;
};

}  // namespace lmrun
